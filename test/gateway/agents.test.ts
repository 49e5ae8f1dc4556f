import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowsOf } from "../helpers/rows";
import { ResponseValidator, startValidatedGateway } from "../helpers/openapi";

let gw: TestGateway;
let v: ResponseValidator;
let checkedReq: Awaited<ReturnType<typeof startValidatedGateway>>["req"];
const req = (method: string, path: string, body?: unknown) => checkedReq(method, path, body);
const admin = (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) =>
  call(gw.url, method, path, { ...(body === undefined ? {} : { body }), headers: { authorization: `Bearer ${token}` } });

const validApplication = {
  operator_name: "Ada Operator",
  operator_email: "ada@example.com",
  use_case: "Weekly BTC accumulation with a small USDC credit line, human approval for borrows.",
  agent_name: "treasurer-1",
  wallet_address: "0x2222222222222222222222222222222222222222",
  chain: "arbitrum",
  expected_monthly_volume_usdc: 25000,
};

beforeAll(async () => {
  ({ gw, v, req: checkedReq } = await startValidatedGateway());
});
afterAll(() => gw.close());

describe("GET /api/v1/agents/apply", () => {
  it("returns the schema with the required fields", async () => {
    const r = await req("GET", "/api/v1/agents/apply");
    expect(r.status).toBe(200);
    expect(r.body.object).toBe("agent_access_schema");
    expect(r.body.required).toEqual(["operator_name", "operator_email", "use_case"]);
    expect(r.body.input_schema.properties.use_case.minLength).toBe(20);
  });
});

describe("POST /api/v1/agents/apply", () => {
  it("queues a request as received with status_url, status_meaning and review_process", async () => {
    const r = await req("POST", "/api/v1/agents/apply", validApplication);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "agent_access_request", status: "received" });
    expect(r.body.id).toMatch(/^agr_[0-9a-f]{32}$/);
    expect(r.body.status_url).toBe(`${gw.url}/api/v1/agents/apply/${r.body.id}`);
    expect(Object.keys(r.body.status_meaning)).toEqual(["received", "in_review", "closed"]);
    expect(r.body.review_process).toMatch(/human/);
  });

  it("enforces the field limits", async () => {
    const cases = [
      { ...validApplication, operator_name: "A" },
      { ...validApplication, operator_email: "not-an-email" },
      { ...validApplication, use_case: "too short" },
      { ...validApplication, chain: "solana" },
      { ...validApplication, wallet_address: "0xabc" },
      { ...validApplication, expected_monthly_volume_usdc: -5 },
      { operator_name: "Ada", operator_email: "ada@example.com" },
    ];
    for (const body of cases) {
      const r = await req("POST", "/api/v1/agents/apply", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("invalid_request");
    }
  });
});

describe("review lifecycle", () => {
  it("moves received -> in_review -> closed only through the admin API and delivers a live key through the outbox", async () => {
    const created = (await req("POST", "/api/v1/agents/apply", validApplication)).body;
    const id = created.id;

    // not public: without the token 401, the public status stays received
    expect((await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "rev" }, "wrong-token-wrong-token-wrong")).status).toBe(401);
    expect((await call(gw.url, "POST", `/admin/access-requests/${id}/review`, { body: { reviewer: "rev" } })).status).toBe(401);
    expect((await req("GET", `/api/v1/agents/apply/${id}`)).body.status).toBe("received");

    // closing before review is an invalid transition
    const early = await admin("POST", `/admin/access-requests/${id}/close`, { reviewer: "Rita Reviewer", outcome: "approved" });
    expect(early.status).toBe(409);
    expect(early.body.error).toBe("invalid_transition");

    const review = await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "Rita Reviewer" });
    expect(review.status).toBe(200);
    expect(review.body.status).toBe("in_review");
    expect((await req("GET", `/api/v1/agents/apply/${id}`)).body.status).toBe("in_review");
    expect((await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "Other" })).status).toBe(409);

    const close = await admin("POST", `/admin/access-requests/${id}/close`, { reviewer: "Rita Reviewer", outcome: "approved", note: "called the operator" });
    expect(close.status).toBe(200);
    expect(close.body).toMatchObject({ status: "closed", outcome: "approved", live_key_issued: true });
    expect(close.body.treasury_id).toMatch(/^trs_/);
    expect(JSON.stringify(close.body)).not.toMatch(/sk_live_/);
    // the treasury the approval bound is told, in the transaction that closed the request
    expect((await gw.ctx.stores.events.after(close.body.treasury_id, 0, 10)).map((e) => [e.type, e.data])).toEqual([
      ["access_request.status_changed", { access_request_id: id, status: "approved" }],
    ]);

    const status = await req("GET", `/api/v1/agents/apply/${id}`);
    expect(status.body.status).toBe("closed");
    expect(JSON.stringify(status.body)).not.toMatch(/sk_live_|Rita|called the operator/);

    const outbox = await admin("GET", "/admin/outbox");
    const message = outbox.body.data.find((m: any) => m.relatedId === id);
    expect(message).toMatchObject({ kind: "access_approved", recipient: "ada@example.com" });
    const payload = JSON.parse(message.body);
    expect(payload.api_key).toMatch(/^sk_live_/);
    // the key is stored hashed; only the outbox message carries it until delivery
    const keyRows = JSON.stringify(await gw.ctx.stores.apiKeys.all());
    expect(keyRows).not.toContain(payload.api_key);
    expect((await admin("POST", `/admin/outbox/${message.id}/delivered`)).status).toBe(200);
    const after = JSON.stringify(await rowsOf(gw.ctx.db, "outbox"));
    expect(after).not.toContain(payload.api_key);

    const events = (await admin("GET", "/admin/access-requests?status=closed")).body.data.find((r: any) => r.id === id).events;
    expect(events.map((e: any) => e.toStatus)).toEqual(["received", "in_review", "closed"]);
  });

  it("a declined request issues no key", async () => {
    const id = (await req("POST", "/api/v1/agents/apply", validApplication)).body.id;
    await admin("POST", `/admin/access-requests/${id}/review`, { reviewer: "Rita" });
    const close = await admin("POST", `/admin/access-requests/${id}/close`, { reviewer: "Rita", outcome: "declined" });
    expect(close.body.live_key_issued).toBe(false);
    const msg = (await admin("GET", "/admin/outbox")).body.data.find((m: any) => m.relatedId === id);
    expect(JSON.parse(msg.body).api_key).toBeUndefined();
  });

  it("GET /api/v1/agents/apply/{id}: 404 for an unknown id of the spec's pattern (^agr_), 400 for another", async () => {
    expect((await req("GET", `/api/v1/agents/apply/agr_${"f".repeat(32)}`)).status).toBe(404);
    expect((await req("GET", "/api/v1/agents/apply/agr_doesnotexist000000000000")).status).toBe(404);
    expect((await req("GET", "/api/v1/agents/apply/nope")).status).toBe(400);
  });
});

describe("admin API switched off", () => {
  it("answers 404 for every admin path when ADMIN_TOKEN is not configured", async () => {
    const off = await startTestGateway({ ADMIN_TOKEN: "" });
    try {
      const r = await call(off.url, "GET", "/admin/access-requests", { headers: { authorization: "Bearer anything-anything-anything" } });
      expect(r.status).toBe(404);
      expect(r.body.error).toBe("not_found");
    } finally {
      await off.close();
    }
  });
});
