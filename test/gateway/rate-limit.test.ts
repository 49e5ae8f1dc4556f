import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

/** each test its own gateway and fresh windows: no test depends on another's traffic */
let gw: TestGateway;
beforeEach(async () => {
  gw = await startTestGateway({ RATE_LIMIT_READ_PER_MIN: "5", RATE_LIMIT_WRITE_PER_MIN: "3" });
});
afterEach(() => gw.close());

describe("rate limits (spec 8)", () => {
  it("counts writes per client address and answers 429 typed with Retry-After", async () => {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await call(gw.url, "POST", "/api/v1/sandbox/keys");
      statuses.push(last.status);
      if (i < 3) expect(Number(last.headers.get("x-ratelimit-remaining"))).toBe(2 - i);
    }
    expect(statuses).toEqual([201, 201, 201, 429]);
    expect(last!.body.error).toBe("rate_limited");
    expect(last!.body.request_id).toBe(last!.headers.get("x-request-id"));
    const retryAfter = Number(last!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Number(last!.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
  });

  it("keeps reads in their own window", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(gw.url, "GET", "/fees.json")).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it("counts per credential when the request carries a valid key, and per address otherwise", async () => {
    // the address's read window is spent; a valid key has its own
    for (let i = 0; i < 5; i++) expect((await call(gw.url, "GET", "/fees.json")).status).toBe(200);
    expect((await call(gw.url, "GET", "/fees.json")).status).toBe(429);
    const { issueApiKey } = await import("../../gateway/src/services/api-keys");
    const issued = await issueApiKey(gw.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: null, now: new Date(), ttlMs: 60_000 });
    const withKey = await call(gw.url, "GET", "/fees.json", { headers: { authorization: `Bearer ${issued.key}` } });
    expect(withKey.status).toBe(200);
    expect(Number(withKey.headers.get("x-ratelimit-remaining"))).toBe(4);
    // an unknown key is no credential: it counts against the address, which is spent
    const bogus = await call(gw.url, "GET", "/fees.json", { headers: { authorization: `Bearer sk_test_${"A".repeat(43)}` } });
    expect(bogus.status).toBe(429);
  });

  it("puts the headers on error responses too", async () => {
    const r = await call(gw.url, "GET", "/does-not-exist");
    expect(r.headers.get("x-ratelimit-remaining")).not.toBeNull();
    expect(r.headers.get("x-ratelimit-reset")).not.toBeNull();
  });
});

describe("an MCP tool call is limited like its REST twin", () => {
  /** a plain JSON-RPC tools/call over HTTP (what any MCP client sends) */
  const toolCall = (url: string, name: string, args: Record<string, unknown>) =>
    call(url, "POST", "/api/mcp", {
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
      headers: { accept: "application/json, text/event-stream" },
    });

  it("free treasuries made through MCP count against the client's address, shared with REST (no way around the per-hour limit)", async () => {
    const limited = await startTestGateway({ CREDENTIALS_PER_HOUR: "2", RATE_LIMIT_WRITE_PER_MIN: "100", RATE_LIMIT_READ_PER_MIN: "100" });
    try {
      const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
      const first = await toolCall(limited.url, "create_sandbox_treasury", { wallet_address: wallet(1) });
      expect(first.body.result.isError, JSON.stringify(first.body)).toBeUndefined();
      expect(first.body.result.structuredContent).toMatchObject({ object: "treasury", http_status: 200 });
      expect((await call(limited.url, "POST", "/api/v1/treasuries", { body: { wallet_address: wallet(2) } })).status).toBe(200);
      // the hour's two are spent, by either surface
      const third = await toolCall(limited.url, "create_sandbox_treasury", { wallet_address: wallet(3) });
      expect(third.body.result).toMatchObject({ isError: true, structuredContent: { error: "rate_limited", http_status: 429 } });
      expect((await call(limited.url, "POST", "/api/v1/treasuries", { body: { wallet_address: wallet(4) } })).status).toBe(429);
      const made = (await limited.ctx.db.get("SELECT COUNT(*) AS n FROM treasuries")) as { n: number };
      expect(Number(made.n)).toBe(2);
    } finally {
      await limited.close();
    }
  });
});
