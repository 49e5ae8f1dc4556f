/**
 * Errors a newcomer meets first, each saying what is wrong: a missing field is "required" (not an invalid value
 * of it), an unknown route points to the API reference, and a refused credential says whether the header is
 * malformed or the key is not accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { authed, sandboxTenant } from "../helpers/treasury";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

describe("errors that say what is wrong", () => {
  it("a convert without target: the field is required, with its allowed values", async () => {
    const r = await authed(gw.url, (await sandboxTenant(gw.url)).key).post("/api/v1/convert", { amount_usdc: 100 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: "invalid_request", details: [{ location: "body", field: "target" }] });
    expect(r.body.message).toBe(`body field 'target': required: expected one of "btc"|"eth"`);
    // a value that is there but wrong keeps the validator's own words
    const wrong = await authed(gw.url, (await sandboxTenant(gw.url)).key).post("/api/v1/convert", { amount_usdc: 100, target: "doge" });
    expect(wrong.body.message).toMatch(/^body field 'target': Invalid option/);
  });

  it("an unknown route points to the API reference", async () => {
    const r = await call(gw.url, "GET", "/api/v1/nope");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ error: "not_found", request_id: expect.stringMatching(/^req_/) });
    expect(r.body.message).toContain("/docs");
  });

  it("a malformed Authorization header and a key that is not accepted get different words", async () => {
    const asked = (authorization: string) => call(gw.url, "GET", "/api/v1/treasury", { headers: { authorization } });
    const malformed = [await asked("Basic abc"), await asked("Bearer abc")];
    const unknown = await asked(`Bearer sk_test_${"a".repeat(40)}`);
    for (const r of [...malformed, unknown]) expect(r.status).toBe(401);
    for (const r of malformed) expect(r.body.message).toMatch(/Authorization must be 'Bearer sk_test_/);
    expect(unknown.body.message).toBe("invalid credential: unknown API key");
  });
});
