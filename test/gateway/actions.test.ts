import { decodeFunctionData, getAddress } from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { AaveV3Arbitrum, AaveV3Base } from "@aave-dao/aave-address-book";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "@treasury/core/contracts/uniswap";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { ageRow, reachFeeTier, rowCount } from "../helpers/rows";
import { countWriteTransactions } from "../helpers/store";
import { authed, newIdempotencyKey, registerTreasury, sandboxTenant, type Tenant } from "../helpers/treasury";

let gw: TestGateway;
let v: ResponseValidator;

beforeAll(async () => {
  gw = await startTestGateway();
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
});
afterAll(() => gw.close());

const checked = (t: Tenant) => {
  const a = authed(gw.url, t.key);
  return {
    get: async (path: string) => {
      const r = await a.get(path);
      v.check("GET", path, r.status, r.body);
      return r;
    },
    post: async (path: string, body: unknown, key?: string | null) => {
      const r = await a.post(path, body, key);
      v.check("POST", path, r.status, r.body);
      return r;
    },
  };
};

describe("managed mode: immediate simulated execution with the receipts of 2.4", () => {
  it("deposit, convert, borrow, repay change the state and the audit trail", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);

    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 1000, allocation: { btc: 25, eth: 75 } });
    expect(deposit.status).toBe(200);
    expect(deposit.body).toMatchObject({
      sandbox: true,
      object: "action_receipt",
      action: "deposit",
      amount_usdc: 1000,
      fee_usdc: 20,
      net_amount: 980,
      status: "processing",
    });
    expect(deposit.body.deposit_id).toMatch(/^dep_[0-9a-f]{32}$/);
    // the deposit supplies USDC as on a chain, paid from the idle USDC first; its allocation buys nothing
    expect(deposit.body).toMatchObject({ supplied_usdc: 980, allocation: { btc: 25, eth: 75 } });
    expect(deposit.body.bought).toBeUndefined();
    expect(new Date(deposit.body.created_at).toISOString()).toBe(deposit.body.created_at);

    const convert = await api.post("/api/v1/convert", { amount: 1000, target: "eth" });
    expect(convert.status).toBe(200);
    expect(convert.body).toMatchObject({ action: "convert", fee_usdc: 20, target: "eth", estimated_amount: 0.323399999999999999, status: "processing" });
    expect(convert.body.conversion_id).toMatch(/^cnv_/);

    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 500, purpose: "payroll" });
    expect(borrow.status).toBe(200);
    expect(borrow.body).toMatchObject({ action: "borrow", fee_usdc: 10, status: "approved", purpose: "payroll" });
    expect(borrow.body.borrow_id).toMatch(/^brw_/);
    expect(borrow.body.fee_basis).toMatch(/2%/);
    expect(borrow.body.current_ltv).toBe(convert.body.ltv_after);
    expect(borrow.body.ltv_after).toBeGreaterThan(borrow.body.current_ltv);

    const repay = await api.post("/api/v1/repay", { amount_usdc: 3000 });
    expect(repay.status).toBe(200);
    expect(repay.body).toMatchObject({ action: "repay", fee_usdc: 0, status: "completed", remaining_borrow: 21500 });
    expect(repay.body.repayment_id).toMatch(/^rep_/);
    expect(repay.body.ltv_after).toBeLessThan(repay.body.ltv_before);

    const state = await api.get("/api/v1/treasury");
    expect(state.status).toBe(200);
    // 5000 idle - 1000 deposited - 1000 converted + 490 borrowed net - 3000 repaid
    expect(state.body).toMatchObject({ treasury_id: t.treasuryId, usdc_balance: 490, debt_usdc: 21500, borrowed_usd: 21500, sandbox: true });
    expect(state.body.holdings).toMatchObject({ usdc: 490, usdc_supplied: 980 });

    const audit = await api.get("/api/v1/audit");
    expect(audit.status).toBe(200);
    expect(audit.body.data.map((e: any) => [e.action, e.fee_usdc, e.trigger, e.fee_bearing])).toEqual([
      ["deposit", 20, "api_request", true],
      ["convert", 20, "api_request", true],
      ["borrow", 10, "api_request", true],
      ["repay", 0, "api_request", false],
    ]);
    expect(audit.body.data[0].execution_ref).toBe(deposit.body.deposit_id);
    expect(audit.body).toMatchObject({ has_more: false, next_cursor: null });

    // each receipt can be read again by its id (extension), by its own treasury only
    for (const [r, id] of [
      [deposit, deposit.body.deposit_id],
      [repay, repay.body.repayment_id],
    ] as const) {
      const again = await api.get(`/api/v1/receipts/${id}`);
      expect(again.status).toBe(200);
      const { chain_execution: _how, ...recorded } = r.body;
      expect(again.body).toEqual(recorded);
    }
    const stranger = checked(await sandboxTenant(gw.url));
    expect((await stranger.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body.error).toBe("not_found");
    expect((await api.get(`/api/v1/receipts/dep_${"0".repeat(32)}`)).status).toBe(404);
    expect((await api.get("/api/v1/receipts/trs_1")).status).toBe(400);

    // a page at a time: the same entries in the same order, however it is cut
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await api.get(`/api/v1/audit?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.data.map((e: any) => e.id));
      cursor = page.body.next_cursor;
      expect(page.body.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual(audit.body.data.map((e: any) => e.id));
    for (const bad of ["limit=0", "limit=501", "limit=x", "cursor=bm90LWEtY3Vyc29y", "cursor=12-", "cursor=1-2-3"]) {
      const r = await api.get(`/api/v1/audit?${bad}`);
      expect([r.status, r.body.error], bad).toEqual([400, "invalid_request"]);
    }
  });

  it("refuses a borrow above the ceiling with the safety rail, and the safe_amount retry passes", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);
    const refused = await api.post("/api/v1/borrow", { amount_usdc: 20000 });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: "ltv_limit_exceeded", allowed: false, approved: false, current_ltv: 40, safe_amount: 12000 });
    expect(refused.body.resulting_ltv).toBeGreaterThan(60);
    const before = await api.get("/api/v1/treasury");
    expect(before.body.debt_usdc).toBe(24000);
    const retry = await api.post("/api/v1/borrow", { amount_usdc: refused.body.safe_amount });
    expect(retry.status).toBe(200);
    expect(retry.body.ltv_after).toBe(60);
  });

  it("applies the body rules of 4.5", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);
    const cases: [string, unknown, string?][] = [
      ["/api/v1/deposits", {}],
      ["/api/v1/deposits", { amount_usdc: 99.99 }],
      ["/api/v1/deposits", { amount_usdc: 0 }],
      ["/api/v1/deposits", { amount_usdc: 100000.000001 }],
      ["/api/v1/deposits", { amount_usdc: 150, amount: 151 }],
      ["/api/v1/deposits", { amount_usdc: 150, allocation: { btc: 60, eth: 60 } }],
      ["/api/v1/deposits", { amount_usdc: 150, treasury_id: "trs_x" }],
      ["/api/v1/convert", { amount_usdc: 150 }],
      ["/api/v1/convert", { amount_usdc: 150, target: "doge" }],
      ["/api/v1/convert", { amount_usdc: 100000 }, "insufficient"],
      ["/api/v1/borrow", { amount_usdc: -1 }],
      ["/api/v1/repay", { amount: "10" }],
    ];
    for (const [path, body] of cases) {
      const r = await api.post(path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
    }
    expect((await api.post("/api/v1/convert", { amount_usdc: 100000, target: "btc" })).body.error).toBe("insufficient_balance");
    // the alias alone, and both equal, are accepted
    expect((await api.post("/api/v1/deposits", { amount: 100 })).status).toBe(200);
    expect((await api.post("/api/v1/deposits", { amount: 100, amount_usdc: 100 })).status).toBe(200);
    expect((await api.post("/api/v1/deposits", { amount: 100000 })).status).toBe(200);
  });

  it("repay with no debt is a typed 400", async () => {
    const t = await registerTreasury(gw.url, { wallet_address: "0x4444444444444444444444444444444444444444", execution_mode: "managed" });
    const r = await checked(t).post("/api/v1/repay", { amount_usdc: 10 });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("no_debt");
  });
});

describe("managed mode on the simulated ledger: one database transaction per action", () => {
  it("concurrent actions of one treasury all apply, exactly, each audited once; a slot a paid request holds is a 409", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const answers = await Promise.all(Array.from({ length: 8 }, () => api.post("/api/v1/convert", { amount_usdc: 100, target: "btc" })));
    // each applies whole or not at all: a 200, or a 409 to retry (PostgreSQL may give up a contended serializable transaction)
    expect(
      answers.every((a) => a.status === 200 || (a.status === 409 && a.body.error === "conflicting_operation")),
      JSON.stringify(answers.map((a) => a.body)),
    ).toBe(true);
    const applied = answers.filter((a) => a.status === 200).length;
    expect(applied).toBeGreaterThan(0);
    expect((await api.get("/api/v1/treasury")).body.usdc_balance).toBe(5000 - 100 * applied);
    expect((await api.get("/api/v1/audit")).body.data.filter((e: any) => e.action === "convert")).toHaveLength(applied);
    // a paid request reserved the treasury (its slot) before settling: a bearer action waits for it
    const now = new Date();
    expect(await gw.ctx.stores.slots.claim(t.treasuryId, "paid-request-holder", now)).toBe(true);
    const blocked = await api.post("/api/v1/convert", { amount_usdc: 100, target: "btc" });
    expect(blocked.status).toBe(409);
    expect(blocked.body.error).toBe("conflicting_operation");
    await gw.ctx.stores.slots.release(t.treasuryId, "paid-request-holder");
    expect((await api.post("/api/v1/convert", { amount_usdc: 100, target: "btc" })).status).toBe(200);
    expect((await api.get("/api/v1/treasury")).body.usdc_balance).toBe(5000 - 100 * (applied + 1));
  });
});

describe("a sandbox key's action is one write transaction with its Idempotency-Key", () => {
  it("claims the key, acts and stores the answer in one transaction; the replay writes nothing", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const key = newIdempotencyKey();
    let first: Awaited<ReturnType<typeof api.post>> | undefined;
    // was three: the key's claim, the action, the key's completion
    expect(await countWriteTransactions(gw.ctx.db, async () => void (first = await api.post("/api/v1/deposits", { amount_usdc: 100 }, key)))).toBe(1);
    expect(first!.status).toBe(200);
    let again: Awaited<ReturnType<typeof api.post>> | undefined;
    expect(await countWriteTransactions(gw.ctx.db, async () => void (again = await api.post("/api/v1/deposits", { amount_usdc: 100 }, key)))).toBe(1);
    expect(again!.headers.get("idempotent-replayed")).toBe("true");
    expect(again!.text).toBe(first!.text);
  });

  it("a failure halfway leaves nothing behind: no claim, no ledger change, no audit entry; the same key then succeeds once", async () => {
    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const key = newIdempotencyKey();
    const before = (await api.get("/api/v1/treasury")).body;
    const fees = gw.ctx.stores.fees;
    const record = fees.record;
    // the fee audit is written after the ledger moved, inside the action's transaction
    fees.record = async () => {
      throw new Error("the disk went away");
    };
    try {
      const failed = await api.post("/api/v1/deposits", { amount_usdc: 100 }, key);
      expect(failed.status).toBe(500);
      expect(failed.body.error).toBe("internal_error");
    } finally {
      fees.record = record;
    }
    expect((await api.get("/api/v1/treasury")).body).toEqual(before);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);
    expect(await rowCount(gw.ctx.db, "idempotency_keys", { key })).toBe(0);
    const retried = await api.post("/api/v1/deposits", { amount_usdc: 100 }, key);
    expect(retried.status).toBe(200);
    expect((await api.get("/api/v1/treasury")).body).not.toEqual(before);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(1);
  });

  it("a wallet-mode treasury's action keeps its claim, its lease and the separate completion (it leaves the store: an envelope to sign)", async () => {
    const t = await registerTreasury(gw.url, { wallet_address: privateKeyToAccount(generatePrivateKey()).address, chain: "base" });
    const api = authed(gw.url, t.key);
    let r: Awaited<ReturnType<typeof api.post>> | undefined;
    const writes = await countWriteTransactions(gw.ctx.db, async () => void (r = await api.post("/api/v1/deposits", { amount_usdc: 500 })));
    expect(r!.status).toBe(202);
    expect(writes).toBeGreaterThan(1);
  });
});

describe("wallet mode: real Aave V3 envelopes", () => {
  const wallet = privateKeyToAccount(generatePrivateKey());

  it("returns 202 with an envelope whose calls decode to what was asked, and leaves the state alone", async () => {
    const t = await registerTreasury(gw.url, { wallet_address: wallet.address, chain: "base" });
    const api = checked(t);
    const r = await api.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(r.status).toBe(202);
    const env = r.body;
    expect(env).toMatchObject({ sandbox: true, object: "unsigned_transaction", status: "awaiting_signature", action: "deposit", amount_usdc: 500 });
    expect(env.tx_id).toMatch(/^tx_[0-9a-f]{32}$/);
    expect(new Date(env.expires_at).getTime() - new Date(env.created_at).getTime()).toBe(15 * 60 * 1000);
    expect(env.unsigned_transaction).toMatchObject({ chain: "base", chain_id: 8453, to: AaveV3Base.POOL, value: "0" });
    expect(env.steps.map((s: any) => s.kind)).toEqual(["fee_transfer", "approval", "pool_call"]);

    const [fee, approve, supply] = env.steps;
    const usdc = AaveV3Base.ASSETS.USDC.UNDERLYING;
    expect(fee.unsigned_transaction.to).toBe(usdc);
    expect(decodeFunctionData({ abi: ERC20_ABI, data: fee.unsigned_transaction.data })).toEqual({
      functionName: "transfer",
      args: [getAddress("0x000000000000000000000000000000000000fee5"), 10_000_000n],
    });
    expect(decodeFunctionData({ abi: ERC20_ABI, data: approve.unsigned_transaction.data })).toEqual({
      functionName: "approve",
      args: [AaveV3Base.POOL, 490_000_000n],
    });
    // the envelope has its own tx_id (the one-signature relay); each step its own
    expect(new Set([env.tx_id, fee.tx_id, approve.tx_id, supply.tx_id]).size).toBe(4);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: supply.unsigned_transaction.data })).toEqual({
      functionName: "supply",
      args: [usdc, 490_000_000n, wallet.address, 0],
    });
    expect(env.unsigned_transaction.data).toBe(supply.unsigned_transaction.data);
    expect(supply.summary).toMatchObject({ contract: "Aave V3 Pool", function: "supply", amount: { units: "490000000", usdc: 490 } });

    const state = await api.get("/api/v1/treasury");
    expect(state.body).toMatchObject({ usdc_balance: 0, debt_usdc: 0, pending_tx_id: env.tx_id });
    expect((await api.get("/api/v1/audit")).body.data).toEqual([]);

    // a second action would race the pending envelope
    const second = await api.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ error: "conflicting_operation", pending_tx_id: env.tx_id });
  });

  it("encodes borrow (variable rate) and repay on Arbitrum's pool with native USDC", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const t = await registerTreasury(gw.url, { wallet_address: account.address, chain: "arbitrum", preset: "aggressive" });
    // give the simulated treasury collateral and debt directly in its ledger
    await gw.ctx.stores.treasuries.updateHoldings(
      t.treasuryId,
      { btcUnits: 100_000_000n, ethUnits: 0n, usdcMicro: 1_000_000_000n, debtMicro: 10_000_000_000n },
      new Date().toISOString(),
    );
    const api = checked(t);
    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 1000 });
    expect(borrow.status).toBe(202);
    const usdcn = AaveV3Arbitrum.ASSETS.USDCn.UNDERLYING;
    expect(borrow.body.unsigned_transaction.to).toBe(AaveV3Arbitrum.POOL);
    expect(borrow.body.unsigned_transaction.chain_id).toBe(42161);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: borrow.body.unsigned_transaction.data })).toEqual({
      functionName: "borrow",
      args: [usdcn, 1_000_000_000n, 2n, 0, account.address],
    });
    expect(borrow.body.steps.map((s: any) => s.kind)).toEqual(["pool_call", "fee_transfer"]);
    // expire it, then repay
    await ageRow(gw.ctx.db, "envelopes", { tx_id: borrow.body.tx_id });
    const repay = await api.post("/api/v1/repay", { amount_usdc: 250 });
    expect(repay.status).toBe(202);
    expect(repay.body.steps.map((s: any) => s.kind)).toEqual(["approval", "pool_call"]);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: repay.body.unsigned_transaction.data })).toEqual({
      functionName: "repay",
      args: [usdcn, 250_000_000n, 2n, account.address],
    });
  });

  it("encodes convert as fee, approval, Uniswap V3 swap, approval and supply of the target", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    await gw.ctx.stores.treasuries.updateHoldings(
      t.treasuryId,
      { btcUnits: 0n, ethUnits: 0n, usdcMicro: 5_000_000_000n, debtMicro: 0n },
      new Date().toISOString(),
    );
    const r = await checked(t).post("/api/v1/convert", { amount_usdc: 3000, target: "btc" });
    expect(r.status).toBe(202);
    expect(r.body.steps.map((s: any) => s.kind)).toEqual(["fee_transfer", "approval", "swap", "approval", "pool_call"]);
    const router = swapRouter02(8453);
    const swap = r.body.steps[2].unsigned_transaction;
    expect(swap.to).toBe(router);
    const decoded = decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: swap.data });
    const cbBTC = AaveV3Base.ASSETS.cbBTC.UNDERLYING;
    expect(decoded.args[0]).toMatchObject({
      tokenIn: AaveV3Base.ASSETS.USDC.UNDERLYING,
      tokenOut: cbBTC,
      fee: 500,
      recipient: account.address,
      amountIn: 2_940_000_000n,
    });
    // 2,940 USDC at 60,000 = 0.049 BTC = 4,900,000 sats, less 1% slippage
    expect(decoded.args[0].amountOutMinimum).toBe(4_851_000n);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: r.body.unsigned_transaction.data })).toEqual({
      functionName: "supply",
      args: [cbBTC, 4_851_000n, account.address, 0],
    });
    expect(r.body.unsigned_transaction.to).toBe(AaveV3Base.POOL);
  });

  it("refuses a borrow over the ceiling with 403 before any envelope exists", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    const r = await checked(t).post("/api/v1/borrow", { amount_usdc: 100 });
    expect(r.status).toBe(403);
    expect(r.body.safe_amount).toBe(0);
    expect(await rowCount(gw.ctx.db, "envelopes", { treasury_id: t.treasuryId })).toBe(0);
  });
});

describe("estimate and reads", () => {
  it("estimates with the reference fields, the rail, and the convert target rule", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);
    const dep = await api.post("/api/v1/estimate", { action: "deposit", amount_usdc: 1000 }, null);
    expect(dep.status).toBe(200);
    expect(dep.body).toMatchObject({
      object: "action_preview",
      approved: true,
      service_fee_usdc: 20,
      service_fee: 20,
      net_amount: 980,
      aave_rate: null,
      dex_spread: null,
      ltv_before: 40,
    });
    expect(dep.body.fee_basis).toMatch(/when funds enter the service/);
    const repay = await api.post("/api/v1/estimate", { action: "repay", amount_usdc: 1000 }, null);
    expect(repay.body.service_fee_usdc).toBe(0);
    const rail = await api.post("/api/v1/estimate", { action: "borrow", amount_usdc: 50000 }, null);
    expect(rail.status).toBe(403);
    expect(rail.body.safe_amount).toBe(12000);
    // the rule is declared once (schemas/actions.ts CONVERT_NEEDS_TARGET): the document's if/then and the check
    const noTarget = await api.post("/api/v1/estimate", { action: "convert", amount_usdc: 10 }, null);
    expect([noTarget.status, noTarget.body.error, noTarget.body.message, noTarget.body.details]).toEqual([
      400,
      "invalid_request",
      "target (btc or eth) is required when action is convert",
      [{ location: "body", field: "target", message: "required for convert" }],
    ]);
    const doc = (await call(gw.url, "GET", "/openapi.json")).body as { components: { schemas: Record<string, Record<string, unknown>> } };
    expect([doc.components.schemas.EstimateRequest!.if, doc.components.schemas.EstimateRequest!.then]).toEqual([
      { properties: { action: { const: "convert" } }, required: ["action"] },
      { required: ["target"] },
    ]);
    expect((await api.post("/api/v1/estimate", { action: "convert", amount_usdc: 10, target: "eth" }, null)).status).toBe(200);
    // a downward leg is estimated free; an action no route performs is refused
    const withdrawal = await api.post("/api/v1/estimate", { action: "withdraw", amount_usdc: 10 }, null);
    expect([withdrawal.status, withdrawal.body.service_fee]).toEqual([200, 0]);
    expect((await api.post("/api/v1/estimate", { action: "protection", amount_usdc: 10 }, null)).status).toBe(400);
    // estimate changes nothing
    expect((await api.get("/api/v1/audit")).body.data).toEqual([]);
  });

  it("serves health (2.9), treasury state (2.8) and the treasury's own policy state", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);
    const health = await api.get("/api/v1/health");
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      sandbox: true,
      health_score: 2.01,
      ltv: 40,
      ltv_zone: "active",
      auto_repay_active: false,
      ltv_zones: { safe: { min: 0, max: 35 }, active: { min: 35, max: 50 }, ceiling: { min: 50, max: 60 }, hard_ceiling: 60 },
    });
    const state = await api.get("/api/v1/treasury");
    expect(state.body).toMatchObject({
      treasury_id: t.treasuryId,
      holdings: { btc: 0.5, eth: 10, usdc: 5000 },
      total_value_usd: 65000,
      borrowed_usd: 24000,
      ltv: 40,
      health_score: 2.01,
      utilization_score: 66.67,
      auto_repay_active: false,
      sandbox: true,
      usdc_balance: 5000,
      debt_usdc: 24000,
    });
    const policy = await api.get("/api/v1/policy-state");
    expect(policy.body).toMatchObject({ object: "policy_state", environment: "sandbox_simulation", address: t.wallet, preset: "balanced" });
    expect(policy.body.delegation.state).toBe("not_granted");
    // the position's history (a TreasuryService read): no sample of a sandbox treasury, in the documented shape
    for (const path of ["/api/v1/health/history", "/api/v1/health/history?since=2026-01-01T00:00:00Z"]) {
      const history = await api.get(path);
      expect([history.status, history.body.object, history.body.treasury_id, history.body.points]).toEqual([200, "position_history", t.treasuryId, []]);
    }
  });

  it("moves the dormancy clock with fee-bearing activity only", async () => {
    const t = await sandboxTenant(gw.url);
    const api = checked(t);
    const first = (await api.get("/api/v1/policy-state")).body.dormancy_clock.last_fee_bearing_activity_at;
    await new Promise((r) => setTimeout(r, 5));
    await api.post("/api/v1/repay", { amount_usdc: 10 });
    expect((await api.get("/api/v1/policy-state")).body.dormancy_clock.last_fee_bearing_activity_at).toBe(first);
    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 10 });
    expect((await api.get("/api/v1/policy-state")).body.dormancy_clock.last_fee_bearing_activity_at).toBe(borrow.body.created_at);
  });
});

describe("the remaining statuses of the 4.5 table", () => {
  it("409 on convert, borrow and repay while an envelope is pending", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    await gw.ctx.stores.treasuries.updateHoldings(
      t.treasuryId,
      { btcUnits: 100_000_000n, ethUnits: 0n, usdcMicro: 5_000_000_000n, debtMicro: 1_000_000_000n },
      new Date().toISOString(),
    );
    const api = checked(t);
    expect((await api.post("/api/v1/deposits", { amount_usdc: 100 })).status).toBe(202);
    for (const [path, body] of [
      ["/api/v1/convert", { amount_usdc: 100, target: "eth" }],
      ["/api/v1/borrow", { amount_usdc: 100 }],
      ["/api/v1/repay", { amount_usdc: 100 }],
    ] as const) {
      const r = await api.post(path, body);
      expect(r.status, path).toBe(409);
      expect(r.body.error).toBe("conflicting_operation");
    }
  });

  it("429 on deposits beyond the write rate", async () => {
    const limited = await startTestGateway({ RATE_LIMIT_WRITE_PER_MIN: "3" });
    try {
      const created = await call(limited.url, "POST", "/api/v1/sandbox/keys");
      const api = authed(limited.url, created.body.key);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await api.post("/api/v1/deposits", { amount_usdc: 100 })).status);
      const limitedResponse = await api.post("/api/v1/deposits", { amount_usdc: 100 });
      v.check("POST", "/api/v1/deposits", limitedResponse.status, limitedResponse.body);
      // the key has its own window (the sandbox key creation counted against the address)
      expect(statuses).toEqual([200, 200, 200]);
      expect(limitedResponse.status).toBe(429);
      expect(limitedResponse.body.error).toBe("rate_limited");
    } finally {
      await limited.close();
    }
  });
});

describe("fees after the platform tier moves (spec 1, rules 1-3 and 6)", () => {
  it("a 1.75% cycle fee through the API; deposit and convert stay at 2%", async () => {
    const tiered = await startTestGateway();
    try {
      // platform volume has reached the growth tier (only live, settled volume does this; here set directly)
      await reachFeeTier(tiered.ctx.db, 1);
      const t = await sandboxTenant(tiered.url);
      const api = authed(tiered.url, t.key);
      const borrow = await api.post("/api/v1/borrow", { amount_usdc: 1000 });
      expect(borrow.body).toMatchObject({ fee_usdc: 17.5, net_amount: 982.5 });
      expect(borrow.body.fee_basis).toBe(
        "1.75% of the amount borrowed per execution (cycle fee, tier growth); the lending protocol's variable interest applies in addition",
      );
      const deposit = await api.post("/api/v1/deposits", { amount_usdc: 1000 });
      expect(deposit.body).toMatchObject({ fee_usdc: 20, net_amount: 980, fee_basis: "2% of the amount when funds enter the service" });
      const convert = await api.post("/api/v1/convert", { amount_usdc: 1000, target: "eth" });
      expect(convert.body).toMatchObject({ fee_usdc: 20, fee_basis: "2% of the amount converted from USDC to BTC/ETH" });
      const estimate = await api.post("/api/v1/estimate", { action: "borrow", amount_usdc: 1000 }, null);
      expect(estimate.body).toMatchObject({ service_fee_usdc: 17.5 });
      const audit = (await api.get("/api/v1/audit")).body.data;
      expect(audit.map((e: any) => [e.action, e.fee_usdc, e.fee_bps, e.fee_tier])).toEqual([
        ["borrow", 17.5, 175, "growth"],
        ["deposit", 20, 200, "growth"],
        ["convert", 20, 200, "growth"],
      ]);
    } finally {
      await tiered.close();
    }
  });
});
