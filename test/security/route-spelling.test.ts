/**
 * One spelling per route: a trailing slash or another letter case is another path, answered by the typed 404,
 * so no rule keyed by a route's path (the free credentials' limit, the read and write windows) is stepped
 * around by respelling it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowCount } from "../helpers/rows";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ CREDENTIALS_PER_HOUR: "1" });
}, 60_000);
afterAll(() => gw.close());

const WALLET = "0x1111111111111111111111111111111111111111";

describe("routes are matched exactly", () => {
  it("a respelled credential route mints nothing once the hour's credentials are spent", async () => {
    expect((await call(gw.url, "POST", "/api/v1/sandbox/keys")).status).toBe(201);
    expect((await call(gw.url, "POST", "/api/v1/sandbox/keys")).status).toBe(429);
    const keys = await rowCount(gw.ctx.db, "api_keys");
    const treasuries = await rowCount(gw.ctx.db, "treasuries");
    for (const path of ["/api/v1/sandbox/keys/", "/API/V1/SANDBOX/KEYS", "/api/v1/Sandbox/keys", "/api/v1/treasuries/", "/API/V1/TREASURIES"]) {
      const r = await call(gw.url, "POST", path, { body: { wallet_address: WALLET, preset: "balanced" } });
      expect(r.status, path).toBe(404);
      expect(r.body.error, path).toBe("not_found");
      expect(r.body.request_id, path).toBe(r.headers.get("x-request-id"));
    }
    expect(await rowCount(gw.ctx.db, "api_keys")).toBe(keys);
    expect(await rowCount(gw.ctx.db, "treasuries")).toBe(treasuries);
  });

  it("reads, pages and the document answer only under their declared spelling", async () => {
    for (const path of ["/API/V1/HEALTH", "/api/v1/health/", "/OPENAPI.JSON", "/openapi.json/", "/api/v1/treasuries/trs_x/"]) {
      const r = await call(gw.url, "GET", path);
      expect(r.status, path).toBe(404);
      expect(r.body.error, path).toBe("not_found");
    }
    for (const path of ["/fees.json", "/openapi.json", "/docs", "/docs/", "/console"]) expect((await call(gw.url, "GET", path)).status, path).toBe(200);
  });
});
