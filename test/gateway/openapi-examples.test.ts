/**
 * Every example of the served OpenAPI document is a request that works: each operation's request example
 * (its body, with its parameters' examples or defaults) played on a fresh sandbox treasury answers 2xx
 * (or, for an example carrying `x-answers`, the refusal it illustrates), every answer as documented; and
 * every example a schema carries is a value of that schema.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { operations, securitySchemes, type Operation } from "../helpers/openapi-requests";

let gw: TestGateway;
let doc: any;
let v: ResponseValidator;

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
  v = new ResponseValidator(doc);
});
afterAll(() => gw?.close());

interface Example {
  name: string;
  body: unknown;
  answers?: { status: number; error: string };
}

/** the operation's request examples: its body's `example`, or each of its `examples` */
function examplesOf(o: Operation): Example[] {
  const media = o.op.requestBody?.content?.["application/json"];
  if (!media) {
    // an operation without a body: its parameters' examples, when it shows any
    const shown = (o.op.parameters ?? []).some((p: any) => p.example !== undefined || p.schema?.example !== undefined);
    return shown ? [{ name: "parameters", body: undefined }] : [];
  }
  if (media.example !== undefined) return [{ name: "example", body: media.example }];
  return Object.entries<any>(media.examples ?? {}).map(([name, e]) => ({ name, body: e.value, answers: e["x-answers"] }));
}

/** a parameter's example, else its default; a required one with neither leaves the operation without an example request */
function parameters(o: Operation): { path: string; headers: Record<string, string> } | undefined {
  let path = o.template;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const p of o.op.parameters ?? []) {
    const value = p.example ?? p.schema?.example ?? p.schema?.default;
    if (value === undefined) {
      if (p.in === "header" && p.name === "Idempotency-Key") headers["idempotency-key"] = `example-${crypto.randomUUID()}`;
      else if (p.required) return undefined;
      continue;
    }
    if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    else if (p.in === "query") query.set(p.name, String(value));
    else if (p.in === "header") headers[p.name.toLowerCase()] = String(value);
  }
  return { path: `${path}${query.size ? `?${query}` : ""}`, headers };
}

describe("the document's examples", () => {
  it("each operation's request example works on a fresh sandbox treasury", async () => {
    const failures: string[] = [];
    let played = 0;
    for (const o of operations(doc)) {
      for (const e of examplesOf(o)) {
        const p = parameters(o);
        if (!p) {
          failures.push(`${o.method} ${o.template} ${e.name}: a required parameter has no example`);
          continue;
        }
        if (securitySchemes(o.op).includes("bearerAuth")) p.headers.authorization = `Bearer ${(await call(gw.url, "POST", "/api/v1/sandbox/keys")).body.key}`;
        const r = await call(gw.url, o.method, p.path, { body: e.body, headers: p.headers });
        played++;
        const what = `${o.method} ${p.path} ${e.name} ${JSON.stringify(e.body)} -> ${r.status} ${r.text.slice(0, 300)}`;
        const ok = e.answers ? r.status === e.answers.status && r.body?.error === e.answers.error : r.status >= 200 && r.status < 300;
        if (!ok) failures.push(`${e.answers ? `not the refusal it illustrates (${e.answers.status} ${e.answers.error})` : "refused"}: ${what}`);
        try {
          v.check(o.method, p.path, r.status, r.body);
        } catch (err) {
          failures.push(`undocumented answer: ${what}\n  ${(err as Error).message.split("\n")[0]}`);
        }
      }
    }
    expect(played).toBeGreaterThanOrEqual(12);
    expect(failures, failures.join("\n\n")).toEqual([]);
  });

  it("every operation that takes a body shows an example of it (but those a fresh service cannot show)", () => {
    // a Safe's delegation and an owner's signature of a Safe transaction need a deployed module, a Safe and its queue
    const needsChainState = ["POST /api/v1/delegation", "POST /api/v1/safe-transactions/{id}/signatures"];
    const without = operations(doc)
      .filter((o) => o.op.requestBody && examplesOf(o).length === 0)
      .map((o) => `${o.method} ${o.template}`);
    expect(without).toEqual(needsChainState);
  });

  it("every example a schema carries is a value of that schema", () => {
    const wrong: string[] = [];
    let checked = 0;
    const walk = (node: unknown, pointer: string) => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${pointer}/${i}`));
      if (!node || typeof node !== "object") return;
      const s = node as Record<string, unknown>;
      if ("example" in s && (s.type !== undefined || s.pattern !== undefined || s.$ref !== undefined)) {
        checked++;
        if (!v.allows(pointer, s.example)) wrong.push(`${pointer}: ${JSON.stringify(s.example)}`);
      }
      for (const [k, child] of Object.entries(s))
        if (k !== "example" && k !== "examples") walk(child, `${pointer}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
    };
    walk(doc.components, "#/components");
    walk(doc.paths, "#/paths");
    expect(checked).toBeGreaterThan(5);
    expect(wrong).toEqual([]);
  });
});
