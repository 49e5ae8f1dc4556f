import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowCount } from "../helpers/rows";

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

  it("with no proxy trusted (the default), X-Forwarded-For names no client: the socket's address is counted", async () => {
    const from = (ip: string) => ({ headers: { "x-forwarded-for": ip } });
    const remaining: number[] = [];
    for (const ip of ["198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4", "198.51.100.5"]) {
      remaining.push(Number((await call(gw.url, "GET", "/fees.json", from(ip))).headers.get("x-ratelimit-remaining")));
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    expect((await call(gw.url, "GET", "/fees.json", from("198.51.100.6"))).status).toBe(429);
  });

  it("behind a trusted proxy, each forwarded client has its own window", async () => {
    const behind = await startTestGateway({ RATE_LIMIT_READ_PER_MIN: "5", TRUST_PROXY: "loopback" });
    try {
      const read = async (ip: string) =>
        Number((await call(behind.url, "GET", "/fees.json", { headers: { "x-forwarded-for": ip } })).headers.get("x-ratelimit-remaining"));
      expect([
        await read("198.51.100.1"),
        await read("198.51.100.1"),
        await read("198.51.100.2"),
        await read("2001:db8::1"),
        await read("2001:db8::2"),
      ]).toEqual([4, 3, 4, 4, 3]); // an IPv6 client is counted by its /56
    } finally {
      await behind.close();
    }
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
      expect(await rowCount(limited.ctx.db, "treasuries")).toBe(2);
    } finally {
      await limited.close();
    }
  });
});

describe("the shared counter takes a client's budget in blocks", () => {
  it("grants exactly the limit on one instance, with one write per block, and the count it reports is exact", async () => {
    const { SharedCounter, blockSizeOf } = await import("../../gateway/src/http/rate-limit");
    const store = gw.ctx.stores.rateLimits;
    let writes = 0;
    const counted = Object.assign(Object.create(Object.getPrototypeOf(store)), store, {
      hit: (...a: Parameters<typeof store.hit>) => (writes++, store.hit(...a)),
    });
    const counter = new SharedCounter(counted, "blocks-one:", 100);
    counter.init({ windowMs: 60_000 } as never);
    expect(blockSizeOf(100)).toBe(10);
    const totals: number[] = [];
    for (let i = 0; i < 101; i++) totals.push((await counter.increment("client")).totalHits);
    expect(totals.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(totals[100]).toBeGreaterThan(100); // refused
    expect(writes).toBe(11); // ten blocks of ten, then the refused lease
  });

  it("two instances on one store never grant more than the limit together, and strand at most a block", async () => {
    const { SharedCounter } = await import("../../gateway/src/http/rate-limit");
    const a = new SharedCounter(gw.ctx.stores.rateLimits, "blocks-two:", 100);
    const b = new SharedCounter(gw.ctx.stores.rateLimits, "blocks-two:", 100);
    for (const c of [a, b]) c.init({ windowMs: 60_000 } as never);
    let granted = 0;
    // interleaved, and concurrent within each round
    for (let i = 0; i < 80; i++) {
      const [x, y] = await Promise.all([a.increment("client"), b.increment("client")]);
      granted += (x.totalHits <= 100 ? 1 : 0) + (y.totalHits <= 100 ? 1 : 0);
    }
    expect(granted).toBeLessThanOrEqual(100);
    expect(granted).toBeGreaterThanOrEqual(90);
  });

  it("a limit under 20 writes every hit (blocks of one), so small limits stay exact across instances", async () => {
    const { SharedCounter, blockSizeOf } = await import("../../gateway/src/http/rate-limit");
    expect(blockSizeOf(19)).toBe(1);
    const a = new SharedCounter(gw.ctx.stores.rateLimits, "blocks-small:", 5);
    const b = new SharedCounter(gw.ctx.stores.rateLimits, "blocks-small:", 5);
    for (const c of [a, b]) c.init({ windowMs: 60_000 } as never);
    const totals = [];
    for (let i = 0; i < 3; i++) totals.push((await a.increment("k")).totalHits, (await b.increment("k")).totalHits);
    expect(totals).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
