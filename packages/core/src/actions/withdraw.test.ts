/**
 * The withdraw declaration, pure: its request, its value at a price, the
 * safe amount in the asset's units, the ledger, the wallet's needs, the one
 * call of its envelope and the signer's rule over that call decoded.
 */
import { decodeFunctionData } from "viem";
import { describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS } from "../contracts/chains";
import { swapRouter02 } from "../contracts/uniswap";
import type { DecodedCall } from "./signer-rule";
import { PolicyRefusal, signerRuleContext } from "./signer-rule";
import { stepContext } from "./steps";
import fc from "fast-check";
import { parseDecimal } from "../domain/money";
import { unitsWorthAtMost, withdraw, WithdrawRequest } from "./withdraw";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const m = AAVE_MARKETS.base;
const price = (s: "USDC" | "ETH" | "BTC") => ({ USDC: 1_000_000n, ETH: 2_500_000_000n, BTC: 50_000_000_000n })[s];
const holdings = { btcUnits: 10_000_000n, ethUnits: 2n * 10n ** 18n, usdcMicro: 500_000_000n, debtMicro: 0n, suppliedUsdcMicro: 500_000_000n };

describe("withdraw", () => {
  it("reads its request: USDC by default (amount_usdc or amount), ETH and BTC in their units", () => {
    expect(withdraw.params({ amount_usdc: 12.5 })).toEqual({ asset: "USDC", units: "12500000" });
    expect(withdraw.params({ asset: "USDC", amount: 1 })).toEqual({ asset: "USDC", units: "1000000" });
    expect(withdraw.params({ asset: "ETH", amount: 0.25 })).toEqual({ asset: "ETH", units: "250000000000000000" });
    expect(withdraw.params({ asset: "BTC", amount: 0.000001 })).toEqual({ asset: "BTC", units: "100" });
    expect(WithdrawRequest.safeParse({ asset: "ETH", amount_usdc: 1 }).success).toBe(false);
    expect(WithdrawRequest.safeParse({ asset: "ETH" }).success).toBe(false);
    expect(WithdrawRequest.safeParse({ asset: "DOGE", amount: 1 }).success).toBe(false);
    expect(WithdrawRequest.safeParse({ asset: "ETH", amount: 0.0000001 }).success).toBe(false);
    expect(WithdrawRequest.safeParse({ amount_usdc: 5 }).success).toBe(true);
  });

  it("is valued at the price, and states its safe amount in the asset's units, rounded down to 6 decimals", () => {
    expect(withdraw.valueMicro!({ asset: "ETH", units: "250000000000000000" }, price)).toBe(625_000_000n);
    expect(withdraw.valueMicro!({ asset: "BTC", units: "100" }, price)).toBe(50_000n);
    expect(withdraw.valueMicro!({ asset: "USDC", units: "7" }, price)).toBe(7n);
    // 1,000 USDC of ETH at 2,500 = 0.4 ETH; 1,000.000001 USDC = 0.4000000004 ETH, shown as 0.4
    expect(withdraw.safeUnits!({ asset: "ETH" }, 1_000_000_000n, price)).toEqual({ amount: "0.4", asset: "ETH" });
    expect(withdraw.safeUnits!({ asset: "ETH" }, 1_000_000_001n, price)).toEqual({ amount: "0.4", asset: "ETH" });
    expect(withdraw.safeUnits!({ asset: "BTC" }, 1_234_567n, price)).toEqual({ amount: "0.000024", asset: "BTC" });
    expect(withdraw.safeUnits!({ asset: "USDC" }, 1_234_567n, price)).toEqual({ amount: "1.234567", asset: "USDC" });
  });

  it("states the most the rail accepts: the value rounds down, so 0.000001 ETH at 2,345.678901 is worth 2,345 micro-USDC", () => {
    const odd = (s: "USDC" | "ETH" | "BTC") => ({ USDC: 1_000_000n, ETH: 2_345_678_901n, BTC: 66_789_012_345n })[s];
    expect(withdraw.valueMicro!({ asset: "ETH", units: "1000000000000" }, odd)).toBe(2_345n);
    // the quotient rounded down would say 0; 0.000001 ETH is accepted with a safe amount of 2,345 micro-USDC
    expect(withdraw.safeUnits!({ asset: "ETH" }, 2_345n, odd)).toEqual({ amount: "0.000001", asset: "ETH" });
    expect(withdraw.safeUnits!({ asset: "ETH" }, 2_344n, odd)).toEqual({ amount: "0", asset: "ETH" });
    fc.assert(
      fc.property(fc.constantFrom<"ETH" | "BTC" | "USDC">("ETH", "BTC", "USDC"), fc.bigInt(0n, 10n ** 12n), fc.bigInt(1n, 10n ** 12n), (asset, safe, p) => {
        const at = () => p;
        const d = { ETH: 18, BTC: 8, USDC: 6 }[asset];
        const units = parseDecimal(withdraw.safeUnits!({ asset }, safe, at).amount, d);
        expect(units).toBe(unitsWorthAtMost(safe, p, d));
        const step = 10n ** BigInt(d - 6);
        expect(units % step).toBe(0n);
        expect(withdraw.valueMicro!({ asset, units: String(units) }, at)).toBeLessThanOrEqual(safe);
        expect(withdraw.valueMicro!({ asset, units: String(units + step) }, at)).toBeGreaterThan(safe);
      }),
      { numRuns: 1_000 },
    );
  });

  it("is a downward leg with the borrow's rail on collateral", () => {
    expect([withdraw.direction, withdraw.fee]).toEqual(["down", "none"]);
    const p = { collateralMicro: 10_000n, debtMicro: 4_000n, liquidationThresholdBps: 8000 };
    expect(withdraw.effect(p, 1_000n, { feeMicro: 0n, feeBps: 0n, basis: "" })).toEqual({ ...p, collateralMicro: 9_000n });
    expect(withdraw.safeAmount!(p, 6000n)).toBe(3_333n); // 10,000 - ceil(4,000 / 60%)
  });

  it("on a ledger: the units leave the books; more than is held is refused", () => {
    expect(withdraw.ledger(holdings, 0n, 0n, { asset: "ETH", units: String(10n ** 18n) }).holdings).toEqual({ ...holdings, ethUnits: 10n ** 18n });
    expect(withdraw.ledger(holdings, 0n, 0n, { asset: "BTC", units: "10000000" }).holdings).toEqual({ ...holdings, btcUnits: 0n });
    // USDC comes out of what the deposits supplied, into the idle balance
    expect(withdraw.ledger(holdings, 0n, 0n, { asset: "USDC", units: "1" }).holdings).toEqual({
      ...holdings,
      suppliedUsdcMicro: 499_999_999n,
      usdcMicro: 500_000_001n,
    });
    expect(() => withdraw.ledger(holdings, 0n, 0n, { asset: "BTC", units: "10000001" })).toThrow("the treasury holds 0.1 BTC; 0.10000001 cannot be withdrawn");
  });

  it("on a chain: needs the units supplied, spends no USDC of the wallet, asks the sandbox for none", () => {
    const position = { debtMicro: 0n, holdings: { aUsdc: 5n, aWeth: 10n, aBtc: 0n, walletUsdc: 0n } };
    expect(withdraw.walletNeeds(0n, position, { asset: "ETH", units: "10" })).toEqual({ usdcMicro: 0n });
    expect(withdraw.walletNeeds(0n, position, { asset: "USDC", units: "6" }).refusal?.code).toBe("insufficient_collateral");
    expect(withdraw.walletNeeds(0n, position, { asset: "BTC", units: "1" }).refusal?.message).toMatch(/0 BTC supplied/);
    expect(withdraw.sandboxUsdcMicro(5n)).toBe(0n);
  });

  it("plans one call: the Pool's withdraw of exactly the units, to the wallet itself", () => {
    const [step, ...rest] = withdraw.plan(stepContext("base", wallet), {
      amountMicro: 0n,
      feeMicro: 0n,
      feeRecipient: wallet,
      params: { asset: "ETH", units: "123" },
    });
    expect(rest).toEqual([]);
    expect(step).toMatchObject({ kind: "pool_call", main: true, to: m.pool });
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: step!.data })).toEqual({ functionName: "withdraw", args: [m.weth, 123n, wallet] });
  });

  it("the signer's rule: exactly one withdrawal of the asked asset and units from the Pool", () => {
    const call = (token: `0x${string}`, amount: bigint, to = m.pool): DecodedCall => ({
      functionName: "withdraw",
      role: "withdraw",
      args: [],
      to,
      token,
      amount,
      usdcMoved: 0n,
    });
    const check = (calls: DecodedCall[], intent: Parameters<typeof withdraw.signer.check>[1]) =>
      withdraw.signer.check(calls, intent, signerRuleContext("withdraw", calls, { ...m, router: swapRouter02(m.chainId) }, 0n, 0n, 200));
    expect(check([call(m.weth, 5n)], { amountMicro: 0n, asset: "ETH", units: 5n })).toBe(1);
    expect(check([call(m.usdc, 5n)], { amountMicro: 0n, units: 5n })).toBe(1);
    expect(() => check([call(m.weth, 6n)], { amountMicro: 0n, asset: "ETH", units: 5n })).toThrow(PolicyRefusal);
    expect(() => check([call(m.btc, 5n)], { amountMicro: 0n, asset: "ETH", units: 5n })).toThrow(
      "the withdraw needs exactly one ETH withdrawal from the Pool; the envelope has 0",
    );
    expect(() => check([call(m.weth, 5n), call(m.weth, 5n)], { amountMicro: 0n, asset: "ETH", units: 5n })).toThrow(/has 2/);
    expect(() => check([call(m.weth, 5n, m.usdc)], { amountMicro: 0n, asset: "ETH", units: 5n })).toThrow(/has 0/);
  });

  it("its title, receipt and command line say what it takes out, in the asset's units", () => {
    expect(withdraw.title!({ asset: "USDC", units: "12500000" }, 12_500_000n)).toBe("withdraw 12.5 USDC from Aave");
    expect(withdraw.title!({ units: "1" }, 3_000_000n)).toBe("withdraw 3 USDC from Aave");
    expect(withdraw.title!({ asset: "ETH", units: "250000000000000000" }, 0n)).toBe("withdraw 0.25 ETH from Aave");
    expect(withdraw.title!({ asset: "BTC", units: "100" }, 0n)).toBe("withdraw 0.000001 BTC from Aave");
    const r = { amountMicro: 0n, fee: { feeMicro: 0n, feeBps: 0n, basis: "" }, ledger: null, ltvBefore: 0, debtAfterMicro: 0n };
    expect(withdraw.receipt({ ...r, id: "wdr_1", params: { asset: "ETH", units: "250000000000000000" } })).toEqual({
      withdrawal_id: "wdr_1",
      asset: "ETH",
      amount: 0.25,
    });
    expect(withdraw.receipt({ ...r, id: "wdr_2", params: { units: "1500000" } })).toEqual({ withdrawal_id: "wdr_2", asset: "USDC", amount: 1.5 });
    expect(withdraw.cli.body(0.5, { asset: "eth" })).toEqual({ asset: "ETH", amount: 0.5 });
    expect(withdraw.cli.body(5, {})).toEqual({ asset: "USDC", amount: 5 });
    expect(withdraw.cli.body(5, { asset: true })).toEqual({ asset: "USDC", amount: 5 });
  });

  it("a withdrawal of more than is supplied is refused with what is there, in the asset's units; a request for nothing takes nothing", () => {
    const position = { debtMicro: 0n, holdings: { aUsdc: 5_000_000n, aWeth: 10n ** 17n, aBtc: 1n, walletUsdc: 0n } };
    expect(withdraw.walletNeeds(0n, position, { asset: "ETH", units: String(10n ** 17n + 1n) })).toEqual({
      usdcMicro: 0n,
      refusal: { code: "insufficient_collateral", message: "the wallet has 0.1 ETH supplied to Aave; 0.100000000000000001 cannot be withdrawn" },
    });
    expect(withdraw.walletNeeds(0n, position, { units: "5000001" }).refusal?.message).toBe(
      "the wallet has 5 USDC supplied to Aave; 5.000001 cannot be withdrawn",
    );
    expect(withdraw.walletNeeds(0n, position, { asset: "BTC", units: "1" })).toEqual({ usdcMicro: 0n });
    expect(withdraw.walletNeeds(0n, position, { asset: "BTC" })).toEqual({ usdcMicro: 0n });
    expect(withdraw.params({})).toEqual({ asset: "USDC", units: "0" });
    expect(withdraw.ledger(holdings, 0n, 0n, { units: "500000000" }).holdings).toEqual({ ...holdings, suppliedUsdcMicro: 0n, usdcMicro: 1_000_000_000n });
    expect(() => withdraw.ledger(holdings, 0n, 0n, { asset: "ETH", units: String(2n * 10n ** 18n + 1n) })).toThrow(
      "the treasury holds 2 ETH; 2.000000000000000001 cannot be withdrawn",
    );
    expect(() => withdraw.ledger(holdings, 0n, 0n, { units: "500000001" })).toThrow("the treasury holds 500 USDC; 500.000001 cannot be withdrawn");
    const r = withdraw.ledger(holdings, 0n, 0n, { asset: "ETH", units: "1" });
    expect([r.bought, r.repaidMicro]).toEqual([{}, 0n]);
  });

  it("the signer's rule names what it expected and what it found", () => {
    const call = (token: `0x${string}`, amount: bigint): DecodedCall => ({
      functionName: "withdraw",
      role: "withdraw",
      args: [],
      to: m.pool,
      token,
      amount,
      usdcMoved: 0n,
    });
    const ctx = (calls: DecodedCall[]) => signerRuleContext("withdraw", calls, { ...m, router: swapRouter02(m.chainId) }, 0n, 0n, 200);
    expect(() => withdraw.signer.check([call(m.btc, 6n)], { amountMicro: 0n, asset: "BTC", units: 5n }, ctx([call(m.btc, 6n)]))).toThrow(
      "the withdrawal takes 6 units of BTC, not the 5 asked for",
    );
    expect(() => withdraw.signer.check([call(m.usdc, 6n)], { amountMicro: 0n }, ctx([call(m.usdc, 6n)]))).toThrow(
      "the withdrawal takes 6 units of USDC, not the ? asked for",
    );
    expect(withdraw.signer.check([call(m.btc, 5n)], { amountMicro: 0n, asset: "BTC", units: 5n }, ctx([call(m.btc, 5n)]))).toBe(1);
    expect(() => withdraw.signer.check([call(m.usdc, 5n)], { amountMicro: 0n, asset: "USDC", units: 5n }, ctx([call(m.weth, 5n)]))).toThrow(
      "the withdraw needs exactly one USDC withdrawal from the Pool; the envelope has 0",
    );
  });
});
