/**
 * Attacks on the ledger and on secrets, over real HTTP against a real gateway
 * and its SQLite file (issue 10, findings 3, 9 and 10): free sandbox volume
 * moving the platform-wide fee ratchet, a relay recording a fee other than the
 * one signed, relay Idempotency-Keys squatted by another caller, credentials in
 * logs, a live key in clear at rest, world-readable database files.
 */
import fs from "node:fs";
import path from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionRecorder } from "../../gateway/src/services/execution-recorder";
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { checkpointWal, reachFeeTier, rowsOf } from "../helpers/rows";
import { authed, newIdempotencyKey, registerTreasury, sandboxTenant } from "../helpers/treasury";
import { feeOf } from "@treasury/core/actions";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

interface Step {
  tx_id: string;
  unsigned_transaction: { chain_id: number; to: Hex; data: Hex; value: string };
}
const sign = (account: PrivateKeyAccount, step: Step, nonce: number) =>
  account.signTransaction({
    type: "eip1559",
    chainId: step.unsigned_transaction.chain_id,
    nonce,
    to: step.unsigned_transaction.to,
    data: step.unsigned_transaction.data,
    value: BigInt(step.unsigned_transaction.value),
    gas: 300_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  });
const relay = (txId: string, signed: string, key = newIdempotencyKey()) =>
  call(gw.url, "POST", "/api/v1/relay", { body: { tx_id: txId, signed_transaction: signed }, headers: { "idempotency-key": key } });

async function walletTreasury() {
  const account = privateKeyToAccount(generatePrivateKey());
  const t = await registerTreasury(gw.url, { wallet_address: account.address });
  await gw.ctx.stores.treasuries.updateHoldings(
    t.treasuryId,
    { btcUnits: 50_000_000n, ethUnits: 10n ** 19n, usdcMicro: 5_000_000_000n, debtMicro: 0n },
    new Date().toISOString(),
  );
  return { account, t, api: authed(gw.url, t.key) };
}

describe("finding 3: free simulated volume never moves real prices", () => {
  it("100 sandbox executions of 100,000 USDC from 5 free sandbox keys leave the fee ratchet where it was", async () => {
    const before = (await call(gw.url, "GET", "/fees.json")).body;
    const tenants = await Promise.all([0, 1, 2, 3, 4].map(() => sandboxTenant(gw.url)));
    for (const t of tenants) {
      await gw.ctx.stores.treasuries.updateHoldings(
        t.treasuryId,
        { btcUnits: 0n, ethUnits: 0n, usdcMicro: 10n ** 14n, debtMicro: 0n },
        new Date().toISOString(),
      );
      const api = authed(gw.url, t.key);
      for (let i = 0; i < 20; i++) expect((await api.post("/api/v1/deposits", { amount_usdc: 100_000 })).status).toBe(200);
    }
    const after = (await call(gw.url, "GET", "/fees.json")).body;
    expect(after.current_tier).toEqual(before.current_tier);
    expect(after.ratchet.platform_volume_usdc).toBe(before.ratchet.platform_volume_usdc);
    // every one of them is audited, as sandbox, counting for nothing
    const audit = await gw.ctx.stores.fees.forTreasury(tenants[0]!.treasuryId);
    expect(audit).toHaveLength(20);
    expect(audit.every((e) => e.environment === "sandbox" && !e.countsTowardVolume && e.feeMicro === 2_000_000_000n)).toBe(true);
  });

  it("only a live treasury's settled execution on a declared production chain counts", async () => {
    const live = await startTestGateway();
    try {
      const admin = (method: string, p: string, body?: unknown) =>
        call(live.url, method, p, { ...(body ? { body } : {}), headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const t = await registerTreasury(live.url, { wallet_address: privateKeyToAccount(generatePrivateKey()).address });
      const created = (
        await call(live.url, "POST", "/api/v1/agents/apply", {
          body: { operator_name: "Ada", operator_email: "ada@example.com", use_case: "Weekly ETH accumulation with a small USDC credit line." },
        })
      ).body;
      await admin("POST", `/admin/access-requests/${created.id}/review`, { reviewer: "Rita" });
      expect(
        (await admin("POST", `/admin/access-requests/${created.id}/close`, { reviewer: "Rita", outcome: "approved", treasury_id: t.treasuryId })).status,
      ).toBe(200);
      const treasury = (await live.ctx.stores.treasuries.get(t.treasuryId))!;
      // the service's own configuration declares no production chain: even a live-key treasury is sandbox
      expect(await live.gateway.services.actions.recorder.environmentOf(treasury)).toBe("sandbox");
      const production = new ExecutionRecorder({ ...live.ctx, config: { ...live.ctx.config, liveChains: ["base"] } });
      expect(await production.environmentOf(treasury)).toBe("live");
      const borrow = (settled: boolean) =>
        live.ctx.db.transaction(() =>
          production.record({
            treasury,
            action: "borrow",
            amountMicro: 10_000_000_000_000n,
            fee: feeOf("borrow", 10_000_000_000_000n),
            origin: "relay",
            envelopeTxId: null,
            trigger: "test",
            settled,
            receipt: () => ({}),
            at: new Date(),
          }),
        );
      await borrow(false);
      expect((await call(live.url, "GET", "/fees.json")).body.current_tier.tier).toBe("launch");
      await borrow(true);
      expect((await call(live.url, "GET", "/fees.json")).body.current_tier.tier).toBe("growth");
    } finally {
      await live.close();
    }
  });
});

describe("finding 10: the envelope's fee is the fee", () => {
  it("a borrow signed at 2% is recorded at 2% even if the tier moved before it was relayed", async () => {
    expect((await call(gw.url, "GET", "/fees.json")).body.current_tier.cycle_fee_pct, "this test needs the launch tier: run it on its own gateway").toBe(2);
    const { account, t, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 10_000 })).body;
    expect(env.fee_usdc).toBe(200);
    // the platform reaches the next tier (1.75%) between signing and relaying
    await reachFeeTier(gw.ctx.db, 1);
    let nonce = 0;
    let last;
    for (const step of env.steps as Step[]) {
      last = await relay(step.tx_id, await sign(account, step, nonce++));
      expect(last.status).toBe(200);
    }
    expect(last!.body.result.receipt).toMatchObject({ action: "borrow", fee_usdc: 200 });
    const audit = (await api.get("/api/v1/audit")).body.data;
    expect(audit.at(-1)).toMatchObject({ action: "borrow", fee_usdc: 200, fee_bps: 200 });
    // the simulated ledger took the signed fee too
    expect((await gw.ctx.stores.treasuries.get(t.treasuryId))!.holdings.usdcMicro).toBe(5_000_000_000n + 10_000_000_000n - 200_000_000n);
  });
});

describe("relay Idempotency-Keys", () => {
  it("must be 8 to 120 characters", async () => {
    const { account, api } = await walletTreasury();
    const step: Step = (await api.post("/api/v1/deposits", { amount_usdc: 150 })).body.steps[0];
    const signed = await sign(account, step, 0);
    for (const key of ["k".repeat(7), "k".repeat(121)]) {
      const r = await relay(step.tx_id, signed, key);
      expect([r.status, r.body.error, r.body.details]).toEqual([
        400,
        "invalid_request",
        [{ location: "header", field: "Idempotency-Key", message: "must be 8 to 120 characters" }],
      ]);
    }
    const missing = await call(gw.url, "POST", "/api/v1/relay", { body: { tx_id: step.tx_id, signed_transaction: signed } });
    expect(missing.body.details).toEqual([{ location: "header", field: "Idempotency-Key", message: "required" }]);
    expect((await relay(step.tx_id, signed, "k".repeat(8))).status).toBe(200);
    // the same signed transaction under another key: the step's receipt, not a second execution
    const again = await relay(step.tx_id, signed, "k".repeat(120));
    expect([again.status, again.body.object]).toEqual([200, "relay_receipt"]);
  });
});

describe("finding 9: relay keys cannot be squatted", () => {
  it("another caller's request with the same Idempotency-Key does not block the signer's relay", async () => {
    const { account, api } = await walletTreasury();
    const deposit = (await api.post("/api/v1/deposits", { amount_usdc: 150 })).body;
    const step: Step = deposit.steps[0];
    const key = newIdempotencyKey();
    // a squatter who learned the tx_id and the key sends garbage, and then a transaction of its own key, first
    await relay(step.tx_id, "0xdeadbeef", key);
    await relay(step.tx_id, await sign(privateKeyToAccount(generatePrivateKey()), step, 0), key);
    const real = await relay(step.tx_id, await sign(account, step, 0), key);
    expect(real.status).toBe(200);
    expect(real.body.object).toBe("relay_receipt");
  });
});

describe("finding 9: secrets stay secret", () => {
  it("an API key is in no log line, whatever header or query parameter carries it", async () => {
    const t = await sandboxTenant(gw.url);
    await call(gw.url, "GET", "/api/v1/treasury", { headers: { "x-api-key": t.key } });
    await call(gw.url, "GET", `/api/v1/treasury?api_key=${t.key}`);
    await call(gw.url, "GET", `/api/v1/health?key=${encodeURIComponent(t.key)}&x=1`);
    await call(gw.url, "GET", "/api/v1/treasury", { headers: { authorization: `Bearer ${t.key}` } });
    await call(gw.url, "GET", "/api/v1/treasury", { headers: { authorization: `Bearer ${t.key}x` } });
    await call(gw.url, "GET", "/api/v1/treasury", { headers: { "x-custom": `token ${t.key}` } });
    for (const header of ["x-payment", "payment-signature", "cookie", "x-admin-token", "proxy-authorization", "api-key"]) {
      await call(gw.url, "GET", "/api/v1/health", { headers: { [header]: `${t.key}` } });
    }
    await call(gw.url, "GET", `/admin/outbox?token=${ADMIN_TOKEN}`);
    await call(gw.url, "GET", "/nope", { headers: { "x-forward-secret": ADMIN_TOKEN } });
    const text = gw
      .logLines()
      .map((l) => JSON.stringify(l))
      .join("\n");
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toContain(t.key);
    expect(text).not.toContain(t.key.slice(8));
    expect(text).not.toContain(ADMIN_TOKEN);
  });

  it("a live key waiting in the outbox is sealed at rest; the database files are readable by the service only", async () => {
    const admin = (method: string, p: string, body?: unknown) =>
      call(gw.url, method, p, { ...(body ? { body } : {}), headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const created = (
      await call(gw.url, "POST", "/api/v1/agents/apply", {
        body: { operator_name: "Ada", operator_email: "ada@example.com", use_case: "Weekly ETH accumulation with a small USDC credit line." },
      })
    ).body;
    await admin("POST", `/admin/access-requests/${created.id}/review`, { reviewer: "Rita" });
    expect((await admin("POST", `/admin/access-requests/${created.id}/close`, { reviewer: "Rita", outcome: "approved" })).status).toBe(200);
    const raw = JSON.stringify(await rowsOf(gw.ctx.db, "outbox"));
    expect(raw).not.toMatch(/sk_live_/);
    // the reviewer's delivery view opens it
    const message = (await admin("GET", "/admin/outbox")).body.data.find((m: any) => m.relatedId === created.id);
    expect(message.body).toMatch(/sk_live_/);
    // and nothing of it is on disk in clear
    await checkpointWal(gw.ctx.db);
    for (const f of fs.readdirSync(gw.dataDir)) {
      const file = path.join(gw.dataDir, f);
      expect(fs.readFileSync(file).includes(Buffer.from("sk_live_")), f).toBe(false);
      expect(fs.statSync(file).mode & 0o077, `${f} is private`).toBe(0);
    }
    expect(fs.statSync(gw.dataDir).mode & 0o077).toBe(0);
  });
});
