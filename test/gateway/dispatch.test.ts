/**
 * The route dispatcher (gateway/src/http/dispatcher.ts) finds a path without parameters in one lookup
 * and leaves the rest to Express's router, which matches exactly as the lookup does: one spelling per route.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

describe("routes are found by their one spelling", () => {
  it("the exact path answers; another letter case or a trailing slash is the typed 404", async () => {
    expect((await call(gw.url, "GET", "/fees.json")).status).toBe(200);
    for (const variant of ["/FEES.JSON", "/fees.json/", "/Api/V1/Public/Gateway-Status", "/api/v1/treasuries/trs_x/"]) {
      const r = await call(gw.url, "GET", variant);
      expect(r.status, variant).toBe(404);
      expect(r.body.error, variant).toBe("not_found");
    }
  });

  it("HEAD is served by the GET route: its headers, no body", async () => {
    const head = await fetch(`${gw.url}/fees.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Number(head.headers.get("content-length"))).toBeGreaterThan(0);
    expect(await head.text()).toBe("");
  });

  it("a known path with another method is 405 with Allow; an unknown path is a typed 404; a parameterized path is routed", async () => {
    const r = await call(gw.url, "POST", "/fees.json", { body: {} });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD");
    expect(r.body.error).toBe("method_not_allowed");
    const missing = await call(gw.url, "GET", "/api/v1/no-such-thing");
    expect(missing.status).toBe(404);
    expect(missing.body.request_id).toBe(missing.headers.get("x-request-id"));
    const receipt = await call(gw.url, "GET", `/api/v1/relay/tx_${"0".repeat(32)}`);
    expect(receipt.status).toBe(404);
    expect(receipt.body.error).toBe("envelope_not_found");
  });

  it("a GET carries the rate-limit headers and no request body is parsed for it", async () => {
    const r = await call(gw.url, "GET", "/api/v1/public/gateway-status");
    expect(r.status).toBe(200);
    expect(Number(r.headers.get("x-ratelimit-limit"))).toBe(100000);
    expect(Number(r.headers.get("x-ratelimit-remaining"))).toBeLessThan(100000);
    expect(Number(r.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
  });
});
