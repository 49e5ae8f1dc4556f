/**
 * The borrow and repay declarations, pure: their requests, the ledger (the
 * fee out of a borrow's proceeds, a repayment of at most the debt), the
 * wallet's needs, the calls of their envelopes decoded, their receipts, and
 * the signer's rule over those calls with each way a tampered envelope is
 * refused.
 */
import { decodeFunctionData, getAddress, maxUint256 } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../../../test/helpers/refusal";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS } from "../contracts/chains";
import { ERC20_ABI } from "../contracts/erc20";
import { swapRouter02 } from "../contracts/uniswap";
import { borrow, BorrowRequest } from "./borrow";
import { repay } from "./repay";
import { signerRuleContext, type DecodedCall } from "./signer-rule";
import { stepContext } from "./steps";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const FEE = getAddress("0x000000000000000000000000000000000000fee5");
const m = AAVE_MARKETS.base;
const c = stepContext("base", wallet);
const h = (over: Partial<{ btcUnits: bigint; ethUnits: bigint; usdcMicro: bigint; debtMicro: bigint }> = {}) => ({
  btcUnits: 0n,
  ethUnits: 0n,
  usdcMicro: 0n,
  debtMicro: 0n,
  ...over,
});
const fee = (feeMicro: bigint) => ({ feeMicro, feeBps: 0n, basis: "cycle 1" });
const call = (role: DecodedCall["role"], token: `0x${string}`, amount: bigint, over: Partial<DecodedCall> = {}): DecodedCall => ({
  functionName: role,
  role,
  args: [],
  to: m.pool,
  token,
  amount,
  usdcMoved: 0n,
  ...over,
});
const check = (d: typeof borrow | typeof repay, calls: DecodedCall[], amountMicro: bigint, maxFee = 0n) =>
  d.signer.check(calls, { amountMicro }, signerRuleContext(d.name, calls, { ...m, router: swapRouter02(m.chainId) }, amountMicro, maxFee, 200));

describe("borrow", () => {
  it("an upward leg with the cycle fee; its purpose is kept, a purpose of more than 200 characters refused", () => {
    expect([borrow.direction, borrow.fee, borrow.status]).toEqual(["up", "cycle", "approved"]);
    expect(borrow.params({ amount_usdc: 5, purpose: "payroll" })).toEqual({ purpose: "payroll" });
    expect(borrow.params({ amount_usdc: 5 })).toEqual({});
    expect(BorrowRequest.safeParse({ amount_usdc: 5, purpose: "x".repeat(201) }).success).toBe(false);
    expect(borrow.effect({ collateralMicro: 10n, debtMicro: 1n, liquidationThresholdBps: 8000 }, 4n, fee(0n)).debtMicro).toBe(5n);
  });

  it("on a ledger the debt grows by the amount, the idle USDC by the amount less the fee; on a chain it needs nothing of the wallet", () => {
    expect(borrow.ledger(h({ usdcMicro: 7n, debtMicro: 100n }), 1_000n, 20n, {})).toEqual({
      holdings: h({ usdcMicro: 987n, debtMicro: 1_100n }),
      bought: {},
      repaidMicro: 0n,
    });
    expect(borrow.walletNeeds(5n, { debtMicro: 0n, holdings: { aUsdc: 0n, aWeth: 0n, aBtc: 0n, walletUsdc: 0n } }, {})).toEqual({ usdcMicro: 0n });
    expect(borrow.sandboxUsdcMicro(5n)).toBe(0n);
  });

  it("plans the Pool's borrow of the amount for the wallet (main), then the fee from the proceeds", () => {
    const [b, f] = borrow.plan(c, { amountMicro: 500_000_000n, feeMicro: 1_000_000n, feeRecipient: FEE, params: {} });
    expect([b!.main, b!.to, f!.main, f!.to]).toEqual([true, m.pool, false, m.usdc]);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: b!.data })).toEqual({ functionName: "borrow", args: [m.usdc, 500_000_000n, 2n, 0, wallet] });
    expect(decodeFunctionData({ abi: ERC20_ABI, data: f!.data })).toEqual({ functionName: "transfer", args: [FEE, 1_000_000n] });
  });

  it("its receipt: the net amount, the fee's basis, the LTV before, the purpose when given", () => {
    const r = { id: "brw_1", amountMicro: 500_000_000n, fee: fee(1_000_000n), ledger: null, ltvBefore: 0.25, debtAfterMicro: 0n };
    expect(borrow.receipt({ ...r, params: { purpose: "payroll" } })).toEqual({
      borrow_id: "brw_1",
      fee_basis: "cycle 1",
      current_ltv: 0.25,
      net_amount: 499,
      purpose: "payroll",
    });
    expect(borrow.receipt({ ...r, params: {} })).toEqual({ borrow_id: "brw_1", fee_basis: "cycle 1", current_ltv: 0.25, net_amount: 499 });
    expect(borrow.cli.body(12, {})).toEqual({ amount_usdc: 12 });
  });

  it("the signer's rule: one USDC borrow from the Pool of exactly the amount, and at most one fee within the rate", () => {
    const fees = call("fee", m.usdc, 10n, { to: m.usdc, counterparty: FEE });
    expect(check(borrow, [call("borrow", m.usdc, 500n)], 500n)).toBe(1);
    expect(check(borrow, [call("borrow", m.usdc, 500n), fees], 500n, 10n)).toBe(2);
    expect(refusalOf(() => check(borrow, [call("borrow", m.usdc, 500n), fees], 500n, 9n))).toMatch(/^the fee of 0.00001 USDC is above/);
    expect(refusalOf(() => check(borrow, [call("borrow", m.usdc, 501n)], 500n))).toBe("the borrow takes 0.000501 USDC, not 0.0005");
    expect(refusalOf(() => check(borrow, [call("borrow", m.weth, 500n)], 500n))).toBe(
      "the borrow needs exactly one USDC borrow from the Pool; the envelope has 0",
    );
    expect(refusalOf(() => check(borrow, [call("borrow", m.usdc, 500n, { to: m.usdc })], 500n))).toBe(
      "the borrow needs exactly one USDC borrow from the Pool; the envelope has 0",
    );
  });
});

describe("repay", () => {
  it("a free downward leg; on a ledger it repays at most the debt from idle USDC, and refuses with no debt or too little USDC", () => {
    expect([repay.direction, repay.fee, repay.params({ amount_usdc: 1 })]).toEqual(["down", "none", {}]);
    expect(repay.ledger(h({ usdcMicro: 1_000n, debtMicro: 300n }), 500n, 0n, {})).toEqual({
      holdings: h({ usdcMicro: 700n, debtMicro: 0n }),
      bought: {},
      repaidMicro: 300n,
    });
    expect(repay.ledger(h({ usdcMicro: 1_000n, debtMicro: 300n }), 100n, 0n, {})).toEqual({
      holdings: h({ usdcMicro: 900n, debtMicro: 200n }),
      bought: {},
      repaidMicro: 100n,
    });
    expect(() => repay.ledger(h({ usdcMicro: 1_000n }), 100n, 0n, {})).toThrow("the treasury has no debt to repay");
    expect(() => repay.ledger(h({ usdcMicro: 99n, debtMicro: 300n }), 100n, 0n, {})).toThrow(
      "repaying 0.0001 USDC needs that much idle USDC; the treasury holds 0.000099",
    );
    // the USDC the wallet needs: at most its debt
    const position = (debtMicro: bigint) => ({ debtMicro, holdings: { aUsdc: 0n, aWeth: 0n, aBtc: 0n, walletUsdc: 0n } });
    expect(repay.walletNeeds(500n, position(300n), {})).toEqual({ usdcMicro: 300n });
    expect(repay.walletNeeds(200n, position(300n), {})).toEqual({ usdcMicro: 200n });
    expect(repay.walletNeeds(200n, position(0n), {})).toEqual({
      usdcMicro: 0n,
      refusal: { code: "no_debt", message: "the wallet has no USDC debt on Aave to repay" },
    });
    expect(repay.sandboxUsdcMicro(7n)).toBe(7n);
  });

  it("plans the USDC approval to the Pool, then the Pool's repay (main) of the amount for the wallet; its receipt says what is left", () => {
    const [a, r] = repay.plan(c, { amountMicro: 100_000_000n, feeMicro: 0n, feeRecipient: FEE, params: {} });
    expect([a!.main, a!.to, r!.main, r!.to]).toEqual([false, m.usdc, true, m.pool]);
    expect(decodeFunctionData({ abi: ERC20_ABI, data: a!.data })).toEqual({ functionName: "approve", args: [m.pool, 100_000_000n] });
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: r!.data })).toEqual({ functionName: "repay", args: [m.usdc, 100_000_000n, 2n, wallet] });
    const base = { id: "rep_1", amountMicro: 100_000_000n, fee: fee(0n), params: {}, ltvBefore: 0, debtAfterMicro: 50_000_000n };
    expect(repay.receipt({ ...base, ledger: null })).toEqual({ repayment_id: "rep_1", repaid_usdc: 100, remaining_borrow: 50 });
    expect(repay.receipt({ ...base, ledger: { holdings: h(), bought: {}, repaidMicro: 30_000_000n } })).toEqual({
      repayment_id: "rep_1",
      repaid_usdc: 30,
      remaining_borrow: 50,
    });
    expect(repay.onExecuted!({ debtMicro: 2_000_000n })).toEqual({ remaining_borrow: 2 });
  });

  it("the signer's rule: one repay from the wallet and its approval, both exactly the amount; supplied USDC (repayWithATokens) is not a repayment from the wallet", () => {
    const ok = [call("approve", m.usdc, 500n, { to: m.usdc, counterparty: m.pool }), call("repay", m.usdc, 500n)];
    expect(check(repay, ok, 500n)).toBe(2);
    expect(refusalOf(() => check(repay, [ok[0]!, call("repay", m.usdc, 501n)], 500n))).toBe("the repayment moves 0.000501 USDC, not 0.0005");
    expect(refusalOf(() => check(repay, [call("approve", m.usdc, 501n, { to: m.usdc, counterparty: m.pool }), ok[1]!], 500n))).toBe(
      "the approval does not equal the repayment",
    );
    expect(refusalOf(() => check(repay, [ok[0]!, call("repay", m.usdc, maxUint256)], 500n))).toBe(
      "the repayment moves 115792089237316195423570985008687907853269984665640564039457584007913129.639935 USDC, not 0.0005",
    );
    expect(refusalOf(() => check(repay, [ok[0]!, call("repay", m.usdc, 500n, { functionName: "repayWithATokens" })], 500n))).toBe(
      "the repay needs exactly one USDC repayment to the Pool (from the wallet); the envelope has 0",
    );
    expect(refusalOf(() => check(repay, [ok[0]!, call("repay", m.weth, 500n)], 500n))).toMatch(/has 0$/);
    expect(refusalOf(() => check(repay, [ok[0]!, call("repay", m.usdc, 500n, { to: m.weth })], 500n))).toMatch(/has 0$/);
    expect(refusalOf(() => check(repay, [call("approve", m.usdc, 500n, { to: m.usdc, counterparty: swapRouter02(m.chainId) }), ok[1]!], 500n))).toBe(
      "the repay needs exactly one USDC approval to the Pool; the envelope has 0",
    );
    expect(refusalOf(() => check(repay, [call("approve", m.weth, 500n, { to: m.weth, counterparty: m.pool }), ok[1]!], 500n))).toMatch(
      /USDC approval to the Pool; the envelope has 0$/,
    );
    expect(repay.cli.body(3, {})).toEqual({ amount_usdc: 3 });
  });
});
