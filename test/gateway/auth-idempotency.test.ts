import http from "node:http";
import type { AddressInfo } from "node:net";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/src/lib/clock";
import { issueApiKey } from "../../gateway/src/services/api-keys";
import type { AnvilNode } from "../../fixtures/anvil";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createWalletClient, http as viemHttp, parseAbi, publicActions } from "viem";
import { base } from "viem/chains";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowCount } from "../helpers/rows";
import { authed, newIdempotencyKey, registerTreasury, sandboxTenant } from "../helpers/treasury";

const PROTECTED: [string, string, unknown?][] = [
  ["POST", "/api/v1/deposits", { amount_usdc: 100 }],
  ["POST", "/api/v1/convert", { amount_usdc: 100, target: "eth" }],
  ["POST", "/api/v1/borrow", { amount_usdc: 100 }],
  ["POST", "/api/v1/repay", { amount_usdc: 100 }],
  ["POST", "/api/v1/estimate", { action: "deposit", amount_usdc: 100 }],
  ["GET", "/api/v1/health"],
  ["GET", "/api/v1/treasury"],
  ["GET", "/api/v1/policy-state"],
  ["GET", "/api/v1/audit"],
];

let gw: TestGateway;
const clock = new ManualClock(new Date());

beforeAll(async () => {
  gw = await startTestGateway({}, { clock });
});
afterAll(() => gw.close());

describe("bearer authentication (spec 5)", () => {
  it("402 challenge without a credential, 401 typed with an invalid one, on every protected route", async () => {
    for (const [method, path, body] of PROTECTED) {
      const challenge = await call(gw.url, method, path, { ...(body ? { body } : {}), headers: { "idempotency-key": newIdempotencyKey() } });
      expect(challenge.status, `${method} ${path}`).toBe(402);
      expect(challenge.body).toMatchObject({ x402Version: 1, error: "X-PAYMENT header is required" });
      expect(challenge.body.request_id).toBe(challenge.headers.get("x-request-id"));
      expect(challenge.headers.get("www-authenticate")).toMatch(/Bearer.*X402/);
      for (const authorization of ["Bearer sk_test_nope", `Bearer sk_test_${"x".repeat(43)}`, "Basic abc", `Bearer sk_live_${"y".repeat(43)}`]) {
        const r = await call(gw.url, method, path, {
          ...(body ? { body } : {}),
          headers: { authorization, "idempotency-key": newIdempotencyKey() },
        });
        expect(r.status, `${method} ${path} ${authorization}`).toBe(401);
        expect(r.body.error).toBe("unauthorized");
        expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
      }
    }
  });

  it("honours expiry: a sandbox key stops working after expires_at", async () => {
    const t = await sandboxTenant(gw.url);
    expect((await authed(gw.url, t.key).get("/api/v1/health")).status).toBe(200);
    clock.advance(31 * 86_400_000);
    const r = await authed(gw.url, t.key).get("/api/v1/health");
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/expired/);
  });

  it("accepts sk_live_ keys; an unbound live key gets 403 key_not_bound", async () => {
    const t = await sandboxTenant(gw.url);
    const live = await issueApiKey(gw.ctx.stores.apiKeys, { kind: "live", treasuryId: t.treasuryId, now: clock.now(), ttlMs: null });
    expect(live.key).toMatch(/^sk_live_/);
    expect((await authed(gw.url, live.key).get("/api/v1/treasury")).body.treasury_id).toBe(t.treasuryId);
    const unbound = await issueApiKey(gw.ctx.stores.apiKeys, { kind: "live", treasuryId: null, now: clock.now(), ttlMs: null });
    const r = await authed(gw.url, unbound.key).get("/api/v1/treasury");
    expect(r.status).toBe(403);
    expect(r.body.error).toBe("key_not_bound");
  });
});

describe("tenant isolation", () => {
  it("key A only ever reads and acts on treasury A", async () => {
    const a = await sandboxTenant(gw.url);
    const b = await sandboxTenant(gw.url);
    const A = authed(gw.url, a.key);
    const B = authed(gw.url, b.key);
    for (const path of ["/api/v1/health", "/api/v1/treasury", "/api/v1/audit"]) {
      expect((await A.get(path)).body.treasury_id).toBe(a.treasuryId);
      expect((await B.get(path)).body.treasury_id).toBe(b.treasuryId);
    }
    expect((await A.get("/api/v1/policy-state")).body.address).toBe(a.wallet);
    // acting with A never touches B, and there is no way to name B in a request
    expect((await A.post("/api/v1/borrow", { amount_usdc: 1000 })).status).toBe(200);
    expect((await A.post("/api/v1/borrow", { amount_usdc: 1000, treasury_id: b.treasuryId })).status).toBe(400);
    expect((await B.get("/api/v1/treasury")).body.debt_usdc).toBe(24000);
    expect((await A.get("/api/v1/treasury")).body.debt_usdc).toBe(25000);
    expect((await B.get("/api/v1/audit")).body.data).toEqual([]);
  });

  it("idempotency keys are scoped to the credential: the same key under A and B executes twice", async () => {
    const a = await sandboxTenant(gw.url);
    const b = await sandboxTenant(gw.url);
    const key = newIdempotencyKey();
    const ra = await authed(gw.url, a.key).post("/api/v1/borrow", { amount_usdc: 10 }, key);
    const rb = await authed(gw.url, b.key).post("/api/v1/borrow", { amount_usdc: 10 }, key);
    expect(ra.status).toBe(200);
    expect(rb.status).toBe(200);
    expect(ra.body.borrow_id).not.toBe(rb.body.borrow_id);
    expect(rb.headers.get("idempotent-replayed")).toBe("false");
  });
});

describe("Idempotency-Key (spec 8)", () => {
  it("is required, 8 to 120 characters, on the four actions", async () => {
    const t = await sandboxTenant(gw.url);
    for (const path of ["/api/v1/deposits", "/api/v1/convert", "/api/v1/borrow", "/api/v1/repay"]) {
      for (const key of [null, "short77", "k".repeat(121)]) {
        const r = await authed(gw.url, t.key).post(path, { amount_usdc: 100, target: "eth" }, key);
        expect(r.status, `${path} ${key}`).toBe(400);
        expect(r.body.details[0].field).toBe("Idempotency-Key");
      }
    }
    expect((await authed(gw.url, t.key).post("/api/v1/borrow", { amount_usdc: 1 }, "k".repeat(8))).status).toBe(200);
    expect((await authed(gw.url, t.key).post("/api/v1/borrow", { amount_usdc: 1 }, "k".repeat(120))).status).toBe(200);
  });

  it("is printable ASCII: a key with a byte above 0x7E or a tab is 400, and the OpenAPI document states the pattern", async () => {
    const t = await sandboxTenant(gw.url);
    for (const key of ["clé-idempotente-1", "tab\tinside-key"]) {
      const r = await authed(gw.url, t.key).post("/api/v1/borrow", { amount_usdc: 1 }, key);
      // before: 200 (only the length was checked)
      expect([r.status, r.body.error, r.body.details?.[0]?.field], JSON.stringify(key)).toEqual([400, "invalid_request", "Idempotency-Key"]);
    }
    const doc = (await call(gw.url, "GET", "/openapi.json")).body;
    const header = doc.paths["/api/v1/borrow"].post.parameters.find((p: { name: string }) => p.name === "Idempotency-Key");
    expect(new RegExp(header.schema.pattern).test("clé-idempotente-1")).toBe(false);
    expect(new RegExp(header.schema.pattern).test("printable-ascii-key")).toBe(true);
  });

  it("same key and body: the stored response byte for byte, marked as a replay; different body: 422", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const key = newIdempotencyKey();
    const first = await api.post("/api/v1/deposits", { amount_usdc: 250, allocation: { btc: 50, eth: 50 } }, key);
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBe("false");
    // same body with keys in another order is the same body
    const again = await api.post("/api/v1/deposits", { allocation: { eth: 50, btc: 50 }, amount_usdc: 250 }, key);
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await api.post("/api/v1/deposits", { amount_usdc: 251 }, key);
    expect(other.status).toBe(422);
    expect(other.body.error).toBe("idempotency_key_reused");
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(1);
  });

  it("a key whose first request is still running gets 409", async () => {
    const t = await sandboxTenant(gw.url);
    const key = newIdempotencyKey();
    const keyRow = (await gw.ctx.stores.apiKeys.all()).find((k) => k.treasuryId === t.treasuryId)!;
    // a request with this key is in flight (claimed, not completed)
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256").update(`POST /api/v1/borrow\n{"amount_usdc":5}`).digest("hex");
    expect((await gw.ctx.stores.idempotency.claim(`key:${keyRow.id}`, key, hash, clock.now(), "req_test_holder")).kind).toBe("claimed");
    const r = await authed(gw.url, t.key).post("/api/v1/borrow", { amount_usdc: 5 }, key);
    expect(r.status).toBe(409);
    expect(r.body.error).toBe("idempotency_in_progress");
    expect(r.headers.get("retry-after")).toBe("1");
  });

  it("keeps keys at least 24 hours, then forgets them", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const key = newIdempotencyKey();
    const first = await api.post("/api/v1/borrow", { amount_usdc: 3 }, key);
    clock.advance(23 * 3_600_000);
    expect((await api.post("/api/v1/borrow", { amount_usdc: 3 }, key)).headers.get("idempotent-replayed")).toBe("true");
    clock.advance(2 * 3_600_000);
    const later = await api.post("/api/v1/borrow", { amount_usdc: 3 }, key);
    expect(later.headers.get("idempotent-replayed")).toBe("false");
    expect(later.body.borrow_id).not.toBe(first.body.borrow_id);
  });

  it("50 concurrent identical requests in managed mode execute exactly once", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const key = newIdempotencyKey();
    const responses = await Promise.all(Array.from({ length: 50 }, () => api.post("/api/v1/borrow", { amount_usdc: 100 }, key)));
    const originals = responses.filter((r) => r.status === 200 && r.headers.get("idempotent-replayed") === "false");
    const replays = responses.filter((r) => r.status === 200 && r.headers.get("idempotent-replayed") === "true");
    const inFlight = responses.filter((r) => r.status === 409);
    expect(originals).toHaveLength(1);
    expect(replays.length + inFlight.length).toBe(49);
    for (const r of replays) expect(r.text).toBe(originals[0]!.text);
    for (const r of inFlight) expect(r.body.error).toBe("idempotency_in_progress");
    expect(await gw.ctx.stores.executions.count(t.treasuryId)).toBe(1);
    expect((await api.get("/api/v1/treasury")).body.debt_usdc).toBe(24100);
  });
});

describe("50 concurrent identical requests while the handler waits on a chain", () => {
  let anvil: BaseForkNode;
  let chainGw: TestGateway;
  let slowRpc: http.Server;
  /** the RPC in front of the chain holds every answer until the test opens the gate */
  let openGate: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  beforeAll(async () => {
    anvil = await startBaseFork();
    slowRpc = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", async () => {
        await gate;
        const upstream = await fetch(anvil.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
        res.setHeader("content-type", "application/json");
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((r) => slowRpc.listen(0, "127.0.0.1", () => r()));
    chainGw = await startTestGateway({ BASE_RPC_URL: `http://127.0.0.1:${(slowRpc.address() as AddressInfo).port}` });
  });
  afterAll(async () => {
    await chainGw?.close();
    slowRpc?.close();
    await anvil?.stop();
  });

  it("create one envelope; the others see 409 in flight or the replay", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    // the wallet holds USDC on the fork: the deposit passes the chain-backed balance check
    await anvil.fund(account.address, 1_000_000_000n);
    const t = await registerTreasury(chainGw.url, { wallet_address: account.address });
    const api = authed(chainGw.url, t.key);
    const key = newIdempotencyKey();
    // the chain does not answer until the 49 others have been answered: the race is decided, not timed
    gate = new Promise<void>((r) => (openGate = r));
    const pending = Array.from({ length: 50 }, () => api.post("/api/v1/deposits", { amount_usdc: 500 }, key));
    const settled: Awaited<(typeof pending)[number]>[] = [];
    for (const p of pending) void p.then((r) => settled.push(r));
    while (settled.length < 49) await new Promise((r) => setTimeout(r, 10));
    openGate();
    const responses = await Promise.all(pending);
    const originals = responses.filter((r) => r.status === 202 && r.headers.get("idempotent-replayed") === "false");
    const inFlight = responses.filter((r) => r.status === 409 && r.body.error === "idempotency_in_progress");
    expect(originals).toHaveLength(1);
    // every other request found the key in flight while the first waited on the chain
    expect(inFlight).toHaveLength(49);
    for (const r of inFlight) expect(r.headers.get("retry-after")).toBe("1");
    // a retry now replays the stored 202, byte for byte
    const replay = await api.post("/api/v1/deposits", { amount_usdc: 500 }, key);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(originals[0]!.text);
    expect(await rowCount(chainGw.ctx.db, "envelopes", { treasury_id: t.treasuryId })).toBe(1);
    // the nonce hint came from the chain: a fresh account has nonce 0, steps count up
    expect(originals[0]!.body.steps.map((s: any) => s.unsigned_transaction.nonce)).toEqual([0, 1, 2]);
  });
});
