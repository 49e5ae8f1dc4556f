/**
 * Finding 6 (text a person reads): what an applicant or an agent writes and a
 * reviewer or an operator reads (an access request's names and use case, a
 * borrow's purpose, the reviewer's own name and note) never carries control
 * characters (C0 but the line breaks and tabs of multi-line text, DEL, C1) or
 * bidirectional controls (embeddings and overrides U+202A-U+202E, isolates
 * U+2066-U+2069, the marks U+200E, U+200F, U+061C): such a request is a 400
 * `invalid_request` naming the field, and nothing is stored. One rule, one
 * declaration (schemas/common.ts `personText`), and the pattern the OpenAPI
 * document shows is the rule the gateway enforces. Ordinary text (accents,
 * emoji, CJK, right-to-left scripts, newlines in the use case) passes as it
 * was written. In the reviewer's console the text is shown as text (escaped,
 * each field in its own bidirectional isolate), checked in headless Chromium.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { CHROMIUM, launchBrowser } from "../helpers/browser";
import { ResponseValidator } from "../helpers/openapi";
import { setRow } from "../helpers/rows";
import { authed, sandboxTenant } from "../helpers/treasury";

let gw: TestGateway;
let v: ResponseValidator;
let doc: any;

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
  v = new ResponseValidator(doc);
});
afterAll(() => gw?.close());

const admin = (method: string, path: string, body?: unknown) =>
  call(gw.url, method, path, { ...(body === undefined ? {} : { body }), headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
const apply = async (body: unknown) => {
  const r = await call(gw.url, "POST", "/api/v1/agents/apply", { body });
  v.check("POST", "/api/v1/agents/apply", r.status, r.body);
  return r;
};
const stored = async () => (await admin("GET", "/admin/access-requests")).body.data as Record<string, unknown>[];

const valid = {
  operator_name: "Ada Operator",
  operator_email: "ada@example.com",
  use_case: "Weekly BTC accumulation with a small USDC credit line, human approval for borrows.",
  agent_name: "treasurer-1",
  agent_framework: "langchain",
  company: "Example Labs",
};

/** what an attacker sends: NULs (30 of them, enough for the use case's 20-character minimum), a right-to-left override, a C1 control (CSI), and the rest of the set */
const HOSTILE: [string, string][] = [
  ["30 NULs", "\u0000".repeat(30)],
  ["U+202E RIGHT-TO-LEFT OVERRIDE", "Ada \u202Egnp.exe Operator and a use case long enough"],
  ["U+009B (C1 CSI)", "Ada \u009B31m Operator and a use case long enough"],
];
const MORE_HOSTILE: [string, string][] = [
  ["U+0085 (C1 NEL)", "Ada \u0085 Operator and a use case long enough"],
  ["DEL", "Ada \u007F Operator and a use case long enough"],
  ["ESC", "Ada \u001B[2J Operator and a use case long enough"],
  ["U+2066 LEFT-TO-RIGHT ISOLATE", "Ada \u2066x\u2069 Operator and a use case long enough"],
  ["U+202A LEFT-TO-RIGHT EMBEDDING", "Ada \u202Ax\u202C Operator and a use case long enough"],
  ["U+200F RIGHT-TO-LEFT MARK", "Ada \u200F Operator and a use case long enough"],
  ["U+061C ARABIC LETTER MARK", "Ada \u061C Operator and a use case long enough"],
  ["vertical tab", "Ada \u000B Operator and a use case long enough"],
];
const FIELDS = ["operator_name", "use_case", "agent_name", "agent_framework", "company"] as const;

function expectRefused(r: { status: number; body: any }, field: string, what: string) {
  expect(r.status, `${field} with ${what}: ${JSON.stringify(r.body)}`).toBe(400);
  expect(r.body.error).toBe("invalid_request");
  expect(r.body.request_id).toEqual(expect.any(String));
  expect(r.body.message).toContain(`'${field}'`);
  expect(r.body.details.map((d: { field: string }) => d.field)).toContain(field);
}

describe("finding 6: control and bidirectional characters in text a person reads", () => {
  it("POST /api/v1/agents/apply refuses NULs, U+202E and a C1 control in every free-text field, naming it, and stores nothing", async () => {
    const before = (await stored()).length;
    for (const field of FIELDS) {
      for (const [what, text] of HOSTILE) {
        expectRefused(await apply({ ...valid, [field]: text }), field, what);
      }
    }
    // the rest of the set, in the field the reviewer reads first and in the multi-line one
    for (const field of ["operator_name", "use_case"] as const) {
      for (const [what, text] of MORE_HOSTILE) expectRefused(await apply({ ...valid, [field]: text }), field, what);
    }
    // line breaks are for the use case only: a name is one line
    expectRefused(await apply({ ...valid, operator_name: "Ada\nOperator" }), "operator_name", "a newline");
    expectRefused(await apply({ ...valid, company: "Example\tLabs" }), "company", "a tab");
    // nothing reached the reviewer's queue
    const after = await stored();
    expect(after.length).toBe(before);
    expect(JSON.stringify(after)).not.toMatch(/[\u0000\u202E\u009B]/);
  });

  it("the existing lengths still hold, whatever the rule leaves (spaces only, controls only)", async () => {
    for (const [field, text] of [
      ["operator_name", "   "],
      ["operator_name", "A"],
      ["operator_name", "\u202E\u202E"],
      ["use_case", "too short"],
      ["use_case", ` ${"\u200F".repeat(25)} `],
      ["use_case", `\n\n\t${"x".repeat(19)}\n\n`],
    ] as const) {
      expectRefused(await apply({ ...valid, [field]: text }), field, JSON.stringify(text));
    }
  });

  it("ordinary text passes as written: accents, emoji, CJK, right-to-left scripts, newlines and tabs in the use case", async () => {
    const text = {
      operator_name: "  Zoë Ñúñez-Łukasiewicz 李小龍  ",
      operator_email: "zoe@example.com",
      use_case: "Accumulate BTC weekly — café budget.\n\tThen borrow USDC for payroll 💸 (給料).\r\nשלום: مرحبا بالعالم, 👩‍👩‍👧 family office.\n",
      agent_name: "エージェント・1 🤖",
      agent_framework: "LangGraph (Python)",
      company: "Société Générale d'Exemple — 株式会社",
    };
    const r = await apply(text);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const row = (await stored()).find((x) => x.id === r.body.id)!;
    // names and use case are trimmed as before; the rest is kept exactly
    expect(row).toMatchObject({ ...text, operator_name: text.operator_name.trim(), use_case: text.use_case.trim() });
  });

  it("a borrow's purpose and the reviewer's name and note follow the same rule", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    expect((await api.post("/api/v1/convert", { amount_usdc: 1000, target: "eth" })).status).toBe(200);
    const audit = async () => (await api.get("/api/v1/audit")).body.data as { action: string }[];
    const before = await audit();
    for (const [what, purpose] of [...HOSTILE, ["U+2067 RIGHT-TO-LEFT ISOLATE", "payroll \u2067 for March"]]) {
      const r = await api.post("/api/v1/borrow", { amount_usdc: 100, purpose });
      v.check("POST", "/api/v1/borrow", r.status, r.body);
      expectRefused(r, "purpose", what!);
    }
    // no borrow happened: the audit trail is as it was
    expect(await audit()).toEqual(before);
    const ok = await api.post("/api/v1/borrow", { amount_usdc: 100, purpose: "payroll — März 💸 給料" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.purpose).toBe("payroll — März 💸 給料");

    // the reviewer's name and note are read by the operator (the outcome) and by other reviewers (the history)
    const id = (await apply(valid)).body.id as string;
    const review = await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "Rita \u202EReviewer" });
    expectRefused(review, "reviewer", "U+202E");
    expect((await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "Rita Reviewer" })).status).toBe(200);
    const close = await admin("POST", `/admin/access-requests/${id}/close`, { reviewer: "Rita Reviewer", outcome: "declined", note: "no\u0000thanks" });
    expectRefused(close, "note", "NUL");
    const closed = await admin("POST", `/admin/access-requests/${id}/close`, {
      reviewer: "Rita Reviewer",
      outcome: "declined",
      note: "Merci — not yet.\nCome back with a live agent.",
    });
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
  });

  it("the documented rule is the enforced rule: each field's pattern in /openapi.json (and the MCP and apply schemas) refuses the attack and accepts ordinary text", async () => {
    const schemas = doc.components.schemas;
    const patterns: [string, string, boolean][] = [
      ...FIELDS.map((f) => [`AccessRequestBody.${f}`, schemas.AccessRequestBody.properties[f].pattern, f === "use_case"] as [string, string, boolean]),
      ["BorrowRequest.purpose", schemas.BorrowRequest.properties.purpose.pattern, false],
    ];
    const apply = (await call(gw.url, "GET", "/api/v1/agents/apply")).body.input_schema.properties;
    for (const f of FIELDS) patterns.push([`GET /api/v1/agents/apply ${f}`, apply[f].pattern, f === "use_case"]);
    const tools = (await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/list" } })).body.result.tools;
    const mcp = tools.find((t: { name: string }) => t.name === "request_live_access").inputSchema.properties;
    for (const f of FIELDS) patterns.push([`MCP request_live_access ${f}`, mcp[f].pattern, f === "use_case"]);
    for (const [where, pattern, multiline] of patterns) {
      expect(pattern, `${where} has a pattern`).toEqual(expect.any(String));
      // as JSON Schema validators compile it (ECMA-262, with and without the u flag)
      for (const re of [new RegExp(pattern), new RegExp(pattern, "u")]) {
        for (const [what, text] of [...HOSTILE, ...MORE_HOSTILE]) expect(re.test(text), `${where} refuses ${what}`).toBe(false);
        expect(re.test("Zoë Ñúñez 李小龍 — Société 💸 שלום مرحبا and more than twenty"), `${where} accepts ordinary text`).toBe(true);
        expect(re.test("first line of a long use case\n\tsecond line\r\nthird"), `${where} on line breaks`).toBe(multiline);
      }
    }
  });
});

describe.skipIf(!CHROMIUM)("finding 6: the reviewer's console shows what an applicant wrote as text", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, 60_000);
  afterAll(() => browser?.close());

  it("markup stays text, and a record stored before the rule cannot reorder the fields around it", async () => {
    const markup = {
      ...valid,
      operator_name: `<img src=x onerror="document.body.dataset.pwned='1'">`,
      use_case: `</dd><script>document.body.dataset.pwned='1'</script><b>bold</b> "quoted" & 'single'\nsecond line`,
      agent_name: `"><svg onload="document.body.dataset.pwned='1'">`,
    };
    const id = (await apply(markup)).body.id as string;
    // a request stored before the rule existed (written straight to the store): its override must stay inside its own field
    const legacy = (await apply({ ...valid, operator_name: "Mallory Legacy" })).body.id as string;
    await setRow(gw.ctx.db, "access_requests", { id: legacy }, { operator_name: "Mallory \u202Emoc.elpmaxe@" });

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${gw.url}/console#reviewer`);
    await page.fill("#admin-token", ADMIN_TOKEN);
    await page.fill("#reviewer-name", "Rita Reviewer");
    await page.click("#admin-form button[type=submit]");
    const card = page.locator(`[data-testid=request][data-id="${id}"]`);
    await card.waitFor();
    expect(await card.locator("[data-field=operator_name]").textContent()).toBe(markup.operator_name);
    expect(await card.locator("[data-field=use_case]").textContent()).toBe(markup.use_case);
    expect(await card.locator("[data-field=agent_name]").textContent()).toBe(markup.agent_name);
    expect(await card.locator("img, script, svg, b").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();
    // each field is its own bidirectional isolate: the legacy override ends with the name, the e-mail beside it is unchanged
    const old = page.locator(`[data-testid=request][data-id="${legacy}"]`);
    const name = old.locator("[data-field=operator_name]");
    expect(await name.evaluate((e) => e.tagName)).toBe("BDI");
    expect(await name.textContent()).toBe("Mallory \u202Emoc.elpmaxe@");
    expect(await old.locator("[data-field=operator_email]").evaluate((e) => e.tagName)).toBe("BDI");
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
