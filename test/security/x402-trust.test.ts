/**
 * Attacks on identity and charging over x402 (issue 10, findings 1, 4, 5, 8,
 * 9), run over real HTTP with the real x402 client library against a local
 * Base Sepolia (Anvil 84532, TestUSDC) and the project's facilitator. Every
 * balance is read on chain, to the atomic unit.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registrationStatement } from "@treasury/core/domain/statements";
import { call } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { authed, newIdempotencyKey, registerProven, registerTreasury } from "../helpers/treasury";
import {
  challengeFor,
  envelopeCount,
  newPayer,
  paymentFor,
  paymentHeader,
  settledPaymentCount,
  startX402Stack,
  startX402Suite,
  type Payer,
  type X402Stack,
} from "../helpers/x402-stack";

let stack: X402Stack;
let base: string;
let v: ResponseValidator;

beforeAll(async () => void ({ stack, base, v } = await startX402Suite()), 60_000);
afterAll(() => stack?.close());

const PRICE = { deposit: 50_000n, treasury: 1_100n, audit: 1_300n, estimate: 10_000n };

/** one paid request, with a fresh proof for the route's own requirements */
async function paid(wallet: Payer["wallet"], method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const header = await paymentFor(wallet, base, method, path, body);
  const r = await call(base, method, path, { ...(body === undefined ? {} : { body }), headers: { "x-payment": header, ...headers } });
  v.check(method, path, r.status, r.body);
  return r;
}

describe("finding 1: a registration proves nothing unless it carries the wallet's signature", () => {
  it("an attacker's registration of a payer's address neither captures, shadows nor blocks the payer's paid calls", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    // the attacker registers the victim's address twice: managed (to see paid "executions") and wallet (to hold a pending envelope)
    const managed = await registerTreasury(base, { wallet_address: account.address, execution_mode: "managed", preset: "aggressive" });
    const blocker = await registerTreasury(base, { wallet_address: account.address, execution_mode: "wallet" });
    // the attacker's own key works on its own treasury (the sandbox case), e.g. a pending envelope
    expect((await authed(base, blocker.key).post("/api/v1/deposits", { amount_usdc: 200 })).status).toBe(202);

    const read = await paid(wallet, "GET", "/api/v1/treasury");
    expect(read.status).toBe(200);
    const payerTreasury = read.headers.get("x-treasury-id")!;
    expect([managed.treasuryId, blocker.treasuryId]).not.toContain(payerTreasury);
    expect(read.body).toMatchObject({ execution_mode: "wallet" });

    // the payer's paid deposit is not blocked by the attacker's pending envelope (no 409), and lands on its own treasury
    const deposit = await paid(wallet, "POST", "/api/v1/deposits", { amount_usdc: 150 }, { "idempotency-key": newIdempotencyKey() });
    expect(deposit.status).toBe(202);
    expect(deposit.body.treasury_id).toBe(payerTreasury);
    // nothing of the payer's shows on the attacker's treasuries
    for (const t of [managed, blocker])
      expect((await authed(base, t.key).get("/api/v1/audit")).body.data.filter((e: any) => e.trigger === "x402_payment")).toHaveLength(0);
    expect(await envelopeCount(stack.gateway, managed.treasuryId)).toBe(0);
    // the public view by address is never the attacker's unproven registration: it is the payer's own
    const pub = await call(base, "GET", `/api/v1/public/policy-state?address=${account.address}`);
    expect(pub.status).toBe(200);
    expect(pub.body.preset).toBe("balanced");
    expect(pub.body.execution_mode ?? "wallet").not.toBe("managed");
  });

  it("a registration with the wallet's signed statement is proven, and the wallet's payments land on it", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const proven = await registerProven(base, account, { preset: "conservative" });
    expect(proven.body.ownership).toBe("proven");
    const read = await paid(wallet, "GET", "/api/v1/treasury");
    expect(read.headers.get("x-treasury-id")).toBe(proven.treasuryId);
    expect((await call(base, "GET", `/api/v1/public/policy-state?address=${account.address}`)).body.preset).toBe("conservative");
  });

  it("refuses a proof signed by another key, a stale one, a reused nonce, and a statement for another service", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const thief = privateKeyToAccount(generatePrivateKey());
    const fresh = (over: Partial<{ issuedAt: string; nonce: string; service: string }> = {}) => ({
      service: over.service ?? base,
      wallet: owner.address,
      chain: "base" as const,
      executionMode: "wallet" as const,
      nonce: over.nonce ?? `n_${randomBytes(12).toString("hex")}`,
      issuedAt: over.issuedAt ?? new Date().toISOString(),
    });
    const register = async (signer: typeof owner, facts: ReturnType<typeof fresh>) =>
      call(base, "POST", "/api/v1/treasuries", {
        body: {
          wallet_address: owner.address,
          ownership_proof: { signature: await signer.signTypedData(registrationStatement(facts)), nonce: facts.nonce, issued_at: facts.issuedAt },
        },
      });
    const byThief = await register(thief, fresh());
    expect(byThief.status).toBe(400);
    v.check("POST", "/api/v1/treasuries", 400, byThief.body);
    expect(byThief.body.error).toBe("invalid_ownership_proof");
    expect((await register(owner, fresh({ issuedAt: new Date(Date.now() - 3_600_000).toISOString() }))).body.error).toBe("invalid_ownership_proof");
    expect((await register(owner, fresh({ service: "https://another-gateway.example" }))).body.error).toBe("invalid_ownership_proof");
    const once = fresh();
    expect((await register(owner, once)).status).toBe(200);
    const replay = await register(owner, once);
    expect(replay.status).toBe(400);
    expect(replay.body.reason).toMatch(/nonce/);
  });
});

describe("finding 5: charged exactly once per executed action", () => {
  it("a retry with the same Idempotency-Key and a fresh proof, sent while the first is in flight, is never settled", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const before = await stack.chain.balanceOf(account.address);
    const key = newIdempotencyKey();
    const body = { amount_usdc: 300 };
    const requirements = await challengeFor(base, "POST", "/api/v1/deposits", body);
    const [h1, h2, h3] = await Promise.all([paymentHeader(wallet, requirements), paymentHeader(wallet, requirements), paymentHeader(wallet, requirements)]);
    const results = await Promise.all(
      [h1, h2, h3].map((h) => call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": h!, "idempotency-key": key } })),
    );
    const statuses = results.map((r) => r.status).sort();
    // one executes; a retry that arrives after it finished replays its stored 202 (Idempotent-Replayed: true)
    expect(results.filter((r) => r.status === 202 && r.headers.get("idempotent-replayed") !== "true")).toHaveLength(1);
    expect(
      statuses.every((s) => s === 202 || s === 409),
      JSON.stringify(statuses),
    ).toBe(true);
    // the others were refused as in progress (409) or replayed the stored 202: neither is charged
    for (const r of results.filter((r) => r.status !== 202 || r.headers.get("idempotent-replayed") === "true"))
      expect(r.headers.get("x-payment-response")).toBeNull();
    expect(await stack.chain.balanceOf(account.address)).toBe(before - PRICE.deposit);
    expect(await settledPaymentCount(stack.gateway, account.address)).toBe(1);
    // a later retry with the same key and a fresh proof replays, and charges nothing
    const replay = await call(base, "POST", "/api/v1/deposits", {
      body,
      headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key },
    });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await stack.chain.balanceOf(account.address)).toBe(before - PRICE.deposit);
  });

  it("three concurrent paid deposits with distinct keys: one executes and is charged, the conflicted ones are charged nothing", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    // the payer's treasury exists (a paid read), so all three target it
    expect((await paid(wallet, "GET", "/api/v1/treasury")).status).toBe(200);
    const before = await stack.chain.balanceOf(account.address);
    const body = { amount_usdc: 250 };
    const requirements = await challengeFor(base, "POST", "/api/v1/deposits", body);
    const headers = await Promise.all([0, 1, 2].map(() => paymentHeader(wallet, requirements)));
    const results = await Promise.all(
      headers.map((h) => call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": h, "idempotency-key": newIdempotencyKey() } })),
    );
    const ok = results.filter((r) => r.status === 202);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 202)) {
      v.check("POST", "/api/v1/deposits", r.status, r.body);
      expect(r.status).toBe(409);
      expect(r.body.error).toBe("conflicting_operation");
      expect(r.headers.get("x-payment-response")).toBeNull();
    }
    expect(await stack.chain.balanceOf(account.address)).toBe(before - PRICE.deposit);
  });
});

describe("a proof is bound to its route's price", () => {
  it("a proof made for /treasury (1,100) is refused on /health (1,000) and charges nothing; the same key on another route is 422", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const before = await stack.chain.balanceOf(account.address);
    const dearer = await paymentFor(wallet, base, "GET", "/api/v1/treasury");
    const r = await call(base, "GET", "/api/v1/health", { headers: { "x-payment": dearer } });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ error: "payment_does_not_match_route", expected_amount: "1000", received_amount: "1100" });
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
    // and it still pays the route it was made for
    expect((await call(base, "GET", "/api/v1/treasury", { headers: { "x-payment": dearer } })).status).toBe(200);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - PRICE.treasury);
    // one Idempotency-Key, two routes: the second is 422 and is not charged
    const key = newIdempotencyKey();
    expect((await paid(wallet, "POST", "/api/v1/deposits", { amount_usdc: 100 }, { "idempotency-key": key })).status).toBe(202);
    const paidBefore = await stack.chain.balanceOf(account.address);
    const other = await paid(wallet, "POST", "/api/v1/repay", { amount_usdc: 100 }, { "idempotency-key": key });
    expect([other.status, other.body.error]).toEqual([422, "idempotency_key_reused"]);
    expect(await stack.chain.balanceOf(account.address)).toBe(paidBefore);
  });
});

describe("finding 8: reachable 500s, and proofs consumed by refused requests", () => {
  it("a JSON body nested 4,000 levels is a typed 400, with a bearer key and with x402; the proof stays usable", async () => {
    const deep = `${'{"a":'.repeat(4000)}1${"}".repeat(4000)}`;
    const tenant = await registerTreasury(base, { wallet_address: privateKeyToAccount(generatePrivateKey()).address });
    const bearer = await call(base, "POST", "/api/v1/deposits", {
      rawBody: deep,
      headers: { "content-type": "application/json", authorization: `Bearer ${tenant.key}`, "idempotency-key": newIdempotencyKey() },
    });
    expect(bearer.status).toBe(400);
    expect(bearer.body.error).toBe("invalid_request");

    const { account, wallet } = await newPayer(stack.chain);
    const before = await stack.chain.balanceOf(account.address);
    const header = await paymentFor(wallet, base, "POST", "/api/v1/deposits", { amount_usdc: 100 });
    const nested = await call(base, "POST", "/api/v1/deposits", {
      rawBody: deep,
      headers: { "content-type": "application/json", "x-payment": header, "idempotency-key": newIdempotencyKey() },
    });
    expect(nested.status).toBe(400);
    // the same proof then pays a valid request: it was not locked by the refused one
    const ok = await call(base, "POST", "/api/v1/deposits", {
      body: { amount_usdc: 100 },
      headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() },
    });
    expect(ok.status).toBe(202);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - PRICE.deposit);
  });

  it("HEAD on every x402-priced GET is a 402, not a 500", async () => {
    const prices = (await call(base, "GET", "/x402/prices.json")).body.prices.filter((p: any) => p.method === "GET");
    expect(prices.length).toBeGreaterThan(0);
    for (const p of prices) {
      const r = await fetch(`${base}${p.path}`, { method: "HEAD" });
      expect(r.status, p.path).toBe(402);
    }
  });

  it("GET and POST /api/v1/delegation without a credential are 401, with a payment header too", async () => {
    expect((await call(base, "GET", "/api/v1/delegation")).status).toBe(401);
    expect((await call(base, "POST", "/api/v1/delegation", { body: {} })).status).toBe(401);
    expect((await call(base, "GET", "/api/v1/delegation", { headers: { "x-payment": "e30=" } })).status).toBe(401);
  });
});

describe("finding 9: the challenge and payment authorizations", () => {
  it("the challenge's resource is the configured URL, never the Host header", async () => {
    // fetch drops a custom Host header; node:http sends it as given
    const { status, body } = await new Promise<{ status: number; body: { accepts: { resource: string }[] } }>((resolve, reject) => {
      const u = new URL(`${base}/api/v1/treasury`);
      http
        .get({ host: u.hostname, port: u.port, path: u.pathname, headers: { host: "evil.example" } }, (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        })
        .on("error", reject);
    });
    expect(status).toBe(402);
    expect(body.accepts[0]!.resource).toBe(`${base}/api/v1/treasury`);
  });

  it("an authorization valid for 10 years is refused and charges nothing", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const requirements = await challengeFor(base, "GET", "/api/v1/treasury");
    const before = await stack.chain.balanceOf(account.address);
    const header = await paymentHeader(wallet, { ...requirements, maxTimeoutSeconds: 10 * 365 * 86_400 });
    const r = await call(base, "GET", "/api/v1/treasury", { headers: { "x-payment": header } });
    expect(r.status).toBe(402);
    v.check("GET", "/api/v1/treasury", r.status, r.body);
    expect(r.body.error).toBe("authorization_validity_too_long");
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
  });
});

describe("finding 4: rate limits key on verified identities only", () => {
  it("forged X-PAYMENT headers neither buy unlimited requests nor exhaust the named payer's bucket", async () => {
    const limited = await startX402Stack({ RATE_LIMIT_WRITE_PER_MIN: "5" });
    try {
      const url = limited.gateway.url;
      const { account, wallet } = await newPayer(limited.chain);
      // the victim's real proof, prepared before the flood (the challenge itself is a request); the victim has paid
      // this service before (a paid read: its first payment is counted against the address), so it has a bucket of its own
      const realHeader = await paymentFor(wallet, url, "POST", "/api/v1/estimate", { action: "deposit", amount_usdc: 100 });
      expect((await call(url, "GET", "/api/v1/health", { headers: { "x-payment": await paymentFor(wallet, url, "GET", "/api/v1/health") } })).status).toBe(200);
      // forged, unsigned headers naming the victim as payer (and, rotating, anyone else)
      const forged = (from: string) =>
        Buffer.from(
          JSON.stringify({
            x402Version: 1,
            scheme: "exact",
            network: "base-sepolia",
            payload: {
              signature: "0x",
              authorization: { from, to: limited.payTo, value: "10000", validAfter: "0", validBefore: "9999999999", nonce: `0x${"11".repeat(32)}` },
            },
          }),
        ).toString("base64");
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const from = i % 2 === 0 ? account.address : privateKeyToAccount(generatePrivateKey()).address;
        statuses.push(
          (await call(url, "POST", "/api/v1/estimate", { body: { action: "deposit", amount_usdc: 100 }, headers: { "x-payment": forged(from) } })).status,
        );
      }
      // the forgeries share the client's address bucket: they run out
      // (the challenge and the victim's first payment above used two of the 5 writes)
      expect(statuses.slice(4)).toEqual([429, 429, 429]);
      // X-Forwarded-For is not trusted: it does not open new buckets
      const spoofed = await call(url, "POST", "/api/v1/estimate", {
        body: { action: "deposit", amount_usdc: 100 },
        headers: { "x-payment": forged(account.address), "x-forwarded-for": "203.0.113.9" },
      });
      expect(spoofed.status).toBe(429);
      // the victim's genuinely signed payment has its own bucket, untouched by the forgeries
      const real = await call(url, "POST", "/api/v1/estimate", { body: { action: "deposit", amount_usdc: 100 }, headers: { "x-payment": realHeader } });
      expect(real.status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("free credentials are limited per client address", async () => {
    const capped = await startX402Stack({ CREDENTIALS_PER_HOUR: "3" });
    try {
      const url = capped.gateway.url;
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await call(url, "POST", "/api/v1/sandbox/keys")).status);
      statuses.push((await call(url, "POST", "/api/v1/treasuries", { body: { wallet_address: privateKeyToAccount(generatePrivateKey()).address } })).status);
      statuses.push((await call(url, "POST", "/api/v1/sandbox/keys", { headers: { "x-forwarded-for": "198.51.100.7" } })).status);
      expect(statuses).toEqual([201, 201, 201, 429, 429]);
    } finally {
      await capped.close();
    }
  });
});
