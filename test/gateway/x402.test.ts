/**
 * x402 end to end on a local Base Sepolia (Anvil 84532, TestUSDC) with the
 * project's facilitator: real clients (x402-fetch 1.2.0 and @x402/fetch),
 * on-chain balances, and every double-execution pitfall of the stock middleware.
 */
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment as wrapV2, x402Client } from "@x402/fetch";
import { wrapFetchWithPayment as wrapV1, decodeXPaymentResponse } from "x402-fetch";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { call, startTestGateway } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { rowCount } from "../helpers/rows";
import { newIdempotencyKey, sandboxTenant } from "../helpers/treasury";
import {
  challengeFor,
  envelopeCount,
  expireEnvelopes,
  newPayer,
  ONE_PROOF_LOSER,
  paymentFor,
  paymentHeader,
  startX402Suite,
  type X402Stack,
  FACILITATOR_AUTH,
  FACILITATOR_API_KEY,
} from "../helpers/x402-stack";

let stack: X402Stack;
let base: string;
let v: ResponseValidator;

beforeAll(async () => void ({ stack, base, v } = await startX402Suite()), 60_000);
afterAll(() => stack?.close());

describe("the 402 challenge and the price list", () => {
  it("is an x402 v1 challenge made from the same prices as /x402/prices.json", async () => {
    const prices = (await call(base, "GET", "/x402/prices.json")).body;
    v.check("GET", "/x402/prices.json", 200, prices);
    expect(prices).toMatchObject({ x402_version: 1, network: "base-sepolia", asset: stack.chain.usdc, pay_to: stack.payTo });
    // each priced route declares its price (and the MCP tool it serves) once, on its route
    expect(prices.prices.map((p: any) => `${p.method} ${p.path} ${p.amount_atomic} ${p.tool ?? "-"}`).sort()).toEqual(
      [
        "POST /api/v1/deposits 50000 prepare_deposit",
        "POST /api/v1/convert 50100 prepare_convert",
        "POST /api/v1/borrow 50200 prepare_borrow",
        "POST /api/v1/repay 50300 prepare_repay",
        "POST /api/v1/withdraw 50400 prepare_withdraw",
        "POST /api/v1/sell 50500 prepare_sell",
        "POST /api/v1/exit 50600 prepare_exit",
        "POST /api/v1/estimate 10000 estimate_action",
        "GET /api/v1/health 1000 get_health",
        "GET /api/v1/treasury 1100 get_treasury_state",
        "GET /api/v1/policy-state 1200 -",
        "GET /api/v1/audit 1300 -",
        "GET /api/v1/events 1400 -",
      ].sort(),
    );
    const amounts = prices.prices.map((p: any) => p.amount_atomic);
    expect(new Set(amounts).size).toBe(amounts.length);
    for (const p of prices.prices) {
      const r = await call(base, p.method, p.path, { ...(p.method === "POST" ? { body: {} } : {}), headers: { "idempotency-key": newIdempotencyKey() } });
      expect(r.status, `${p.method} ${p.path}`).toBe(402);
      v.check(p.method, p.path, 402, r.body);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer .*X402/);
      const [req] = r.body.accepts;
      expect(req).toMatchObject({
        scheme: "exact",
        network: "base-sepolia",
        maxAmountRequired: p.amount_atomic,
        payTo: stack.payTo,
        asset: stack.chain.usdc,
        resource: `${base}${p.path}`,
        description: p.description,
        maxTimeoutSeconds: 120,
        extra: { name: "USDC", version: "2" },
      });
      expect(p.display).toBe(`$${p.amount_usdc}`);
    }
  });
});

describe("real clients pay end to end", () => {
  it("x402-fetch 1.2.0 pays POST /api/v1/estimate; balances move by exactly the price; the payer gets a wallet-mode treasury", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const before = { payer: await stack.chain.balanceOf(account.address), payTo: await stack.chain.balanceOf(stack.payTo) };
    const pay = wrapV1(fetch, wallet as never);
    const res = await pay(`${base}/api/v1/estimate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "deposit", amount_usdc: 1000 }),
    });
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ object: "action_preview", service_fee_usdc: 20 });
    const settlement = decodeXPaymentResponse(res.headers.get("x-payment-response")!);
    expect(settlement).toMatchObject({ success: true, network: "base-sepolia", payer: account.address });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await stack.chain.balanceOf(account.address)).toBe(before.payer - 10_000n);
    expect(await stack.chain.balanceOf(stack.payTo)).toBe(before.payTo + 10_000n);
    const treasuryId = res.headers.get("x-treasury-id")!;
    const t = (await call(base, "GET", `/api/v1/treasuries/${treasuryId}`)).body;
    expect(t).toMatchObject({ wallet_address: account.address, execution_mode: "wallet", chain: "base" });
  });

  it("@x402/fetch 2.x (which takes the 402's PAYMENT-REQUIRED header: version 2) pays GET /api/v1/health and a deposit envelope", async () => {
    const { account } = await newPayer(stack.chain);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    const pay = wrapV2(fetch, client);
    const payTo0 = await stack.chain.balanceOf(stack.payTo);
    const health = await pay(`${base}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { ltv: number }).ltv).toBe(0);
    const deposit = await pay(`${base}/api/v1/deposits`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": newIdempotencyKey() },
      body: JSON.stringify({ amount_usdc: 500 }),
    });
    expect(deposit.status).toBe(202);
    const envelope = (await deposit.json()) as { unsigned_transaction: { data: string } };
    expect(envelope.unsigned_transaction.data).toMatch(/^0x617ba037/); // supply(address,uint256,address,uint16)
    expect(await stack.chain.balanceOf(stack.payTo)).toBe(payTo0 + 1_000n + 50_000n);
  });
});

describe("no handler runs twice on one payment, and no side effect stands on an unsettled one", () => {
  it("a replayed X-PAYMENT never runs the handler again", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const body = { amount_usdc: 200 };
    const header = await paymentFor(wallet, base, "POST", "/api/v1/deposits", body);
    const first = await call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() } });
    expect(first.status).toBe(202);
    const treasuryId = first.headers.get("x-treasury-id")!;
    const afterFirst = await stack.chain.balanceOf(account.address);
    // the same proof again, even with a fresh Idempotency-Key, is refused before any handler
    await expireEnvelopes(stack.gateway, treasuryId);
    const replay = await call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() } });
    expect(replay.status).toBe(402);
    v.check("POST", "/api/v1/deposits", 402, replay.body);
    // settled on chain and spent on its request: the gateway's own record of the payment refuses it
    expect(replay.body).toMatchObject({ x402Version: 1, error: "payment_already_used" });
    expect(await envelopeCount(stack.gateway, treasuryId)).toBe(1);
    expect(await stack.chain.balanceOf(account.address)).toBe(afterFirst);
  });

  it("an answer the client lost: the same Idempotency-Key with a fresh proof gets the stored answer, free; the spent proof alone gets nothing", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const body = { amount_usdc: 210 };
    const requirements = await challengeFor(base, "POST", "/api/v1/deposits", body);
    const header = await paymentHeader(wallet, requirements);
    const key = newIdempotencyKey();
    const first = await call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": key } });
    expect(first.status).toBe(202);
    const afterFirst = await stack.chain.balanceOf(account.address);
    // the spent proof is public on chain: it replays nothing, even with the key and the body
    const spent = await call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": key } });
    expect([spent.status, spent.body.error]).toEqual([402, "payment_already_used"]);
    const fresh = await paymentHeader(wallet, requirements);
    const again = await call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": fresh, "idempotency-key": key } });
    expect([again.status, again.headers.get("idempotent-replayed"), again.text]).toEqual([202, "true", first.text]);
    // the key with another body is not a replay: 422, and the fresh proof is still unspent
    const changed = await call(base, "POST", "/api/v1/deposits", { body: { amount_usdc: 211 }, headers: { "x-payment": fresh, "idempotency-key": key } });
    expect([changed.status, changed.body.error]).toEqual([422, "idempotency_key_reused"]);
    expect(await envelopeCount(stack.gateway, first.headers.get("x-treasury-id")!)).toBe(1);
    expect(await stack.chain.balanceOf(account.address)).toBe(afterFirst);
    // documented: the spent proof and the fresh proof's replay (402), the proof in progress (409, with its Retry-After)
    const responses = (await call(base, "GET", "/openapi.json")).body.paths["/api/v1/deposits"].post.responses;
    expect(responses["402"].description).toMatch(/payment_already_used.*same Idempotency-Key.*fresh proof/s);
    expect(responses["409"].description).toMatch(/payment_in_progress.*Retry-After/s);
  });

  it("two concurrent requests with one proof run the handler once and charge once", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const body = { amount_usdc: 300 };
    const header = await paymentFor(wallet, base, "POST", "/api/v1/deposits", body);
    const before = await stack.chain.balanceOf(account.address);
    const [a, b] = await Promise.all(
      [0, 1].map(() => call(base, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() } })),
    );
    const winner = a!.status === 202 ? a! : b!;
    const loser = a!.status === 202 ? b! : a!;
    expect(winner.status).toBe(202);
    // while the first runs: 409 (a 402 would make a conforming client pay again); after it: the spent proof's 402
    expect(ONE_PROOF_LOSER).toContainEqual([loser.status, loser.body.error]);
    expect(await envelopeCount(stack.gateway, winner.headers.get("x-treasury-id")!)).toBe(1);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 50_000n);
  });

  it("a proof made for one route and price is refused by another route", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const header = await paymentFor(wallet, base, "GET", "/api/v1/health");
    const before = await stack.chain.balanceOf(account.address);
    const r = await call(base, "GET", "/api/v1/treasury", { headers: { "x-payment": header } });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ error: "payment_does_not_match_route", expected_amount: "1100", received_amount: "1000" });
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
    // the proof is still good where it belongs
    expect((await call(base, "GET", "/api/v1/health", { headers: { "x-payment": header } })).status).toBe(200);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 1_000n);
  });

  it("an action that ends in 4xx charges nothing, and the same proof then pays for a corrected request", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const header = await paymentFor(wallet, base, "POST", "/api/v1/borrow", { amount_usdc: 100 });
    const before = await stack.chain.balanceOf(account.address);
    // a fresh payer treasury has no collateral: the rail refuses the borrow
    const refused = await call(base, "POST", "/api/v1/borrow", {
      body: { amount_usdc: 100 },
      headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: "ltv_limit_exceeded", safe_amount: 0 });
    const invalid = await call(base, "POST", "/api/v1/borrow", {
      body: { amount_usdc: -1 },
      headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() },
    });
    expect(invalid.status).toBe(400);
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
    // nothing stands: the treasury created for this payer was removed with the refusal
    expect(await stack.gateway.ctx.stores.treasuries.findOwnedByWallet(account.address)).toBeUndefined();
    expect(refused.headers.get("x-payment-response")).toBeNull();
  });

  it("if settlement fails after verification, nothing the request did remains", async () => {
    // a facilitator whose settlement account has no ETH for gas: verify passes, settle reverts
    const broke = await startFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: generatePrivateKey(), port: 0 });
    const gw = await startTestGateway({ X402_FACILITATOR: "local", X402_FACILITATOR_URL: broke.url, X402_PAY_TO: stack.payTo });
    try {
      const { account, wallet } = await newPayer(stack.chain);
      const body = { amount_usdc: 150 };
      const header = await paymentFor(wallet, gw.url, "POST", "/api/v1/deposits", body);
      const before = await stack.chain.balanceOf(account.address);
      const r = await call(gw.url, "POST", "/api/v1/deposits", { body, headers: { "x-payment": header, "idempotency-key": newIdempotencyKey() } });
      expect(r.status).toBe(402);
      expect(r.body.error).toBe("settlement_failed");
      expect(r.body.reason).toMatch(/settlement_reverted|funds|gas/i);
      expect(await stack.chain.balanceOf(account.address)).toBe(before);
      expect(await gw.ctx.stores.treasuries.findOwnedByWallet(account.address)).toBeUndefined();
      expect(await envelopeCount(gw)).toBe(0);
      expect(await rowCount(gw.ctx.db, "x402_payments")).toBe(0);
      // a read whose settlement fails returns the 402, not the data
      const readHeader = await paymentFor(wallet, gw.url, "GET", "/api/v1/health");
      const read = await call(gw.url, "GET", "/api/v1/health", { headers: { "x-payment": readHeader } });
      expect(read.status).toBe(402);
      expect(read.body.ltv).toBeUndefined();
    } finally {
      await gw.close();
      await broke.close();
    }
  });
});

describe("either credential", () => {
  it("a valid bearer wins over a payment and nothing is charged; an invalid bearer is 401, not 402", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const tenant = await sandboxTenant(base);
    const header = await paymentFor(wallet, base, "GET", "/api/v1/health");
    const before = await stack.chain.balanceOf(account.address);
    const r = await call(base, "GET", "/api/v1/health", { headers: { authorization: `Bearer ${tenant.key}`, "x-payment": header } });
    expect(r.status).toBe(200);
    expect(r.body.treasury_id).toBe(tenant.treasuryId);
    expect(r.headers.get("x-payment-response")).toBeNull();
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
    const bad = await call(base, "GET", "/api/v1/health", { headers: { authorization: "Bearer sk_test_invalid", "x-payment": header } });
    expect(bad.status).toBe(401);
  });

  it("the payer is the identity: a second payment reaches the same treasury; rate limits count per payer", async () => {
    const limited = await startTestGateway({
      X402_FACILITATOR: "local",
      X402_FACILITATOR_URL: stack.facilitator.url,
      X402_FACILITATOR_API_KEY: FACILITATOR_API_KEY,
      X402_PAY_TO: stack.payTo,
      RATE_LIMIT_READ_PER_MIN: "2",
    });
    try {
      const a = await newPayer(stack.chain);
      const b = await newPayer(stack.chain);
      // challenges come from the other gateway (same prices): unpaid requests count against the address, not the payer
      const pay = async (p: typeof a, path: string) =>
        call(limited.url, "GET", path, { headers: { "x-payment": await paymentFor(p.wallet, base, "GET", path) } });
      const first = await pay(a, "/api/v1/health");
      const second = await pay(a, "/api/v1/treasury");
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body.treasury_id).toBe(first.body.treasury_id);
      const balance = await stack.chain.balanceOf(a.account.address);
      // the payer's first payment proved nothing yet (counted against the address, as a write); paid, it has a bucket of its own
      expect((await pay(a, "/api/v1/health")).status).toBe(200);
      const refused = await pay(a, "/api/v1/health");
      expect(refused.status).toBe(429);
      expect(await stack.chain.balanceOf(a.account.address)).toBe(balance - 1_000n);
      expect((await pay(b, "/api/v1/health")).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("with x402 switched off, a missing credential is 401", async () => {
    const off = await startTestGateway({ X402_ENABLED: "false" });
    try {
      const r = await call(off.url, "GET", "/api/v1/health");
      expect(r.status).toBe(401);
      expect(r.body.error).toBe("unauthorized");
    } finally {
      await off.close();
    }
  });
});

describe("the local facilitator", () => {
  it("answers /supported, refuses a used nonce and a wrong EIP-712 domain", async () => {
    const supported = (await (await fetch(`${stack.facilitator.url}/supported`, { headers: FACILITATOR_AUTH })).json()) as { kinds: unknown[] };
    expect(supported.kinds).toContainEqual({ x402Version: 1, scheme: "exact", network: "base-sepolia" });
    const { wallet } = await newPayer(stack.chain);
    const requirements = await challengeFor(base, "GET", "/api/v1/audit");
    const header = await paymentHeader(wallet, requirements);
    const paymentPayload = JSON.parse(Buffer.from(header, "base64").toString());
    const verify = (reqs: unknown) =>
      fetch(`${stack.facilitator.url}/verify`, {
        method: "POST",
        headers: { "content-type": "application/json", ...FACILITATOR_AUTH },
        body: JSON.stringify({ x402Version: 1, paymentPayload, paymentRequirements: reqs }),
      }).then((r) => r.json());
    expect(await verify(requirements)).toMatchObject({ isValid: true });
    expect(await verify({ ...requirements, extra: { name: "USD Coin", version: "2" } })).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payment_requirements",
    });
    const settle = await fetch(`${stack.facilitator.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json", ...FACILITATOR_AUTH },
      body: JSON.stringify({ x402Version: 1, paymentPayload, paymentRequirements: requirements }),
    }).then((r) => r.json());
    expect(settle).toMatchObject({ success: true });
    expect(await verify(requirements)).toMatchObject({ isValid: false, invalidReason: "invalid_exact_evm_payload_authorization_nonce_used" });
    const bad = await fetch(`${stack.facilitator.url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json", ...FACILITATOR_AUTH },
      body: JSON.stringify({ nope: 1 }),
    });
    expect(bad.status).toBe(400);
    // it answers its gateway only: without the stack's key, a payer cannot settle (its own authorization, for less, say)
    const anonymous = await fetch(`${stack.facilitator.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 1, paymentPayload, paymentRequirements: requirements }),
    });
    expect(anonymous.status).toBe(401);
    expect((await fetch(`${stack.facilitator.url}/supported`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
  });
});
