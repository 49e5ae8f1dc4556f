/**
 * The exit's plan, pure: where the repayment comes from, the rounds of
 * collateral (each withdrawal leaves the health factor at 1.05 at the oracle's
 * prices, never under), the calls in order, and its refusals.
 */
import fc from "fast-check";
import { decodeFunctionData, maxUint256 } from "viem";
import { describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "../../../contracts-abi/aave-pool";
import { AAVE_MARKETS } from "../../../contracts-abi/chains";
import { EXIT_HEALTH_BPS, exitSteps, ExitRefusal, sizeExit, withQuotes, type ExitSnapshot } from "./exit";
import { stepContext } from "./steps";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const m = AAVE_MARKETS.base;
const ETH = 10n ** 18n;
const snapshot = (over: Partial<ExitSnapshot> = {}): ExitSnapshot => ({
  debt: 18_000_000_000n,
  walletUsdc: 0n,
  supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 0n },
  price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 60_000_000_000n },
  lt: { USDC: 7_800n, ETH: 8_250n, BTC: 7_800n },
  ...over,
});
/** the oracle's value less 0.5%: a pool a little under the oracle */
const quote = async (symbol: "ETH" | "BTC", units: bigint) => (units * (symbol === "ETH" ? 3_000_000_000n : 60_000_000_000n) * 995n) / (1000n * (symbol === "ETH" ? ETH : 10n ** 8n));
const calls = (steps: ReturnType<typeof exitSteps>) =>
  steps.filter((s) => s.to === m.pool).map((s) => decodeFunctionData({ abi: AAVE_POOL_ABI, data: s.data }) as { functionName: string; args: readonly unknown[] });

describe("exit", () => {
  it("with enough USDC in the wallet: one approval and the max repay, then every supply withdrawn with max", async () => {
    const plan = await withQuotes(snapshot({ walletUsdc: 20_000_000_000n, supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 1n } }), false, quote);
    expect(plan.rounds).toEqual([]);
    expect(plan.approval).toBe(String(18_000_000_000n + 18_000_000n + 1n)); // the debt, 0.1% and a unit for interest
    const c = calls(exitSteps(stepContext("base", wallet), plan));
    expect(c.map((x) => x.functionName)).toEqual(["repay", "withdraw", "withdraw"]);
    expect(c[0]!.args).toEqual([m.usdc, maxUint256, 2n, wallet]);
    expect(c.slice(1).map((x) => [x.args[0], x.args[1], x.args[2]])).toEqual([[m.weth, maxUint256, wallet], [m.btc, maxUint256, wallet]]);
  });

  it("supplied USDC repays first (repayWithATokens max); what it leaves over is withdrawn", async () => {
    const plan = await withQuotes(snapshot({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } }), false, quote);
    expect([plan.repayWithATokens, plan.approval, plan.rounds, plan.withdrawAll]).toEqual(["max", "0", [], ["USDC", "ETH"]]);
    expect(calls(exitSteps(stepContext("base", wallet), plan)).map((x) => x.functionName)).toEqual(["repayWithATokens", "withdraw", "withdraw"]);
  });

  it("from collateral alone: rounds that each stop at a health factor of 1.05, then the max repay; the guaranteed USDC covers the debt", async () => {
    const s = snapshot();
    const plan = await withQuotes(s, false, quote);
    expect(plan.rounds.length).toBeGreaterThan(1);
    // replay the rounds on the oracle's figures: every withdrawal leaves HF >= 1.05, and what the swaps guarantee covers the debt
    let collateral = 10n * ETH;
    let debt = s.debt;
    for (const [i, r] of plan.rounds.entries()) {
      collateral -= BigInt(r.units);
      const value = (collateral * 3_000_000_000n) / ETH;
      expect(value * 8_250n, `round ${i}`).toBeGreaterThanOrEqual(EXIT_HEALTH_BPS * debt);
      debt -= BigInt(r.repay);
    }
    expect(plan.rounds.reduce((sum, r) => sum + BigInt(r.minOut), 0n)).toBeGreaterThanOrEqual(BigInt(plan.approval));
    const fns = calls(exitSteps(stepContext("base", wallet), plan)).map((x) => x.functionName);
    expect(fns.at(-2)).toBe("repay");
    expect(fns.filter((f) => f === "repay")).toHaveLength(plan.rounds.filter((r) => BigInt(r.repay) > 0n).length + 1);
  });

  it("the lowest liquidation threshold goes first; sell swaps what is left for USDC", async () => {
    const plan = await withQuotes(snapshot({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 10n ** 8n }, debt: 1_000_000_000n }), true, quote);
    expect(plan.rounds[0]!.symbol).toBe("BTC");
    expect(plan.sales.map((x) => x.symbol).sort()).toEqual(plan.withdrawAll.filter((a) => a !== "USDC").sort());
  });

  it("a pool above the oracle: the round that covers the debt is the last, no earlier repayment closes the debt, the rest is withdrawn with max", async () => {
    const s = snapshot();
    const sized = sizeExit(s);
    // the pool pays 20% over the oracle: the sizing's rounds (3% under) are more than the debt needs
    const rich = async (symbol: "ETH" | "BTC", units: bigint) => ((await quote(symbol, units)) * 120n) / 100n;
    const plan = await withQuotes(s, false, rich);
    expect(plan.rounds.length).toBeLessThan(sized.rounds.length);
    const repaid = plan.rounds.reduce((sum, r) => sum + BigInt(r.repay), 0n);
    expect(repaid).toBeLessThan(s.debt);
    expect(plan.rounds.at(-1)!.repay).toBe("0");
    expect(plan.withdrawAll).toEqual(["ETH"]);
  });

  it("supplied USDC within the interest of the debt: a bounded repayWithATokens leaves one unit for the max repayment, the rest of the supply withdrawn", async () => {
    const s = snapshot({ supplied: { USDC: 18_000_000_001n, ETH: ETH, BTC: 0n }, walletUsdc: 20_000_000n });
    const plan = await withQuotes(s, false, quote);
    expect([plan.repayWithATokens, plan.approval, plan.rounds, plan.withdrawAll]).toEqual([String(s.debt - 1n), String(1n + 18_000_000n + 1n), [], ["USDC", "ETH"]]);
    const c = calls(exitSteps(stepContext("base", wallet), plan));
    expect(c.map((x) => x.functionName)).toEqual(["repayWithATokens", "repay", "withdraw", "withdraw"]);
    expect(c[1]!.args[1]).toBe(maxUint256);
    // under the debt: all of the supply (max), the rest from the wallet; nothing of USDC left to withdraw
    const under = await withQuotes(snapshot({ supplied: { USDC: 5_000_000_000n, ETH: ETH, BTC: 0n }, walletUsdc: 20_000_000_000n }), false, quote);
    expect([under.repayWithATokens, under.withdrawAll]).toEqual(["max", ["ETH"]]);
  });

  it("a round that takes all that is left of an asset says so (withdrawn with max)", () => {
    const { rounds } = sizeExit(snapshot({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 0n }, debt: 1_000_000_000n, price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 60_000_000_000n } }));
    for (const r of rounds) if (r.all) expect(r.units).toBeGreaterThan(0n);
    const tiny = sizeExit(snapshot({ supplied: { USDC: 0n, ETH: 1n * ETH, BTC: 0n }, debt: 2_000_000_000n, walletUsdc: 0n }));
    expect(tiny.rounds.every((r) => r.all === (r.units === 1n * ETH) || !r.all)).toBe(true);
  });

  it("swaps of one asset are bounded one after the other: each round's minimum is 1% under what its units add to the pool's quote of the ones before", async () => {
    // a pool whose price falls as it is sold into: the quote of n units is concave
    const calls: bigint[] = [];
    const impact = async (_s: "ETH" | "BTC", units: bigint) => {
      calls.push(units);
      const linear = (units * 3_000_000_000n) / ETH;
      return linear - (linear * units) / (1_000n * ETH);
    };
    const plan = await withQuotes(snapshot(), false, impact);
    expect(plan.rounds.length).toBeGreaterThan(1);
    // quoted cumulatively: 1 unit-set, then the sum of the first two, ...
    let cum = 0n;
    for (const [i, r] of plan.rounds.entries()) {
      cum += BigInt(r.units);
      expect(calls[i]).toBe(cum);
    }
    const total = await impact("ETH", cum);
    const sum = plan.rounds.reduce((acc, r) => acc + BigInt(r.minOut), 0n);
    // together they are 1% under the quote of all of it (to rounding), not more than the pool gives
    expect(sum).toBeLessThanOrEqual((total * 99n) / 100n);
    expect(sum).toBeGreaterThanOrEqual((total * 99n) / 100n - BigInt(plan.rounds.length));
  });

  it("a supply that is not collateral (threshold 0) leaves the health factor alone: taken first, whole; an oracle without a price is refused", async () => {
    // 0.05 BTC (3,000 USDC at the oracle) supplied but not collateral, 10 ETH collateral, 5,000 USDC of debt
    const s = snapshot({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 5_000_000n }, lt: { USDC: 7_800n, ETH: 8_250n, BTC: 0n }, debt: 5_000_000_000n });
    const { rounds } = sizeExit(s);
    expect(rounds[0]).toEqual({ symbol: "BTC", units: 5_000_000n, all: true });
    expect(rounds[1]!.symbol).toBe("ETH");
    expect(() => sizeExit(snapshot({ price: { USDC: 1_000_000n, ETH: 0n, BTC: 60_000_000_000n } }))).toThrow(/no price/);
  });

  it("refuses what it cannot do safely: a position at the threshold, collateral that does not cover the debt", async () => {
    await expect(withQuotes(snapshot({ debt: 25_000_000_000n }), false, quote)).rejects.toThrow(ExitRefusal);
    await expect(withQuotes(snapshot({ debt: 25_000_000_000n }), false, quote)).rejects.toThrow(/too close to liquidation/);
    expect(() => sizeExit(snapshot({ supplied: { USDC: 0n, ETH: 0n, BTC: 0n } }))).toThrow(/does not cover the debt/);
    // a pool far under the oracle: its rounds would repay less than sized, the health factor would fall under 1.05; refused before any envelope
    await expect(withQuotes(snapshot(), false, async (_s, units) => (units * 2_000_000_000n) / ETH)).rejects.toThrow(/too far under/);
    // the wallet's USDC and a little collateral sold at such a pool guarantee less than the debt
    await expect(withQuotes(snapshot({ debt: 1_000_000_000n, walletUsdc: 990_000_000n, supplied: { USDC: 0n, ETH: ETH, BTC: 0n } }), false, async (_s, units) => (units * 1_500_000_000n) / ETH)).rejects.toThrow(/would guarantee/);
  });

  it("property: for any position under the threshold, every round leaves HF >= 1.05 and the rounds cover the debt", async () => {
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 1n, max: 100n }), fc.integer({ min: 1, max: 78 }), async (eth, ltvPct) => {
        const value = eth * 3_000_000_000n;
        const debt = (value * BigInt(ltvPct)) / 100n;
        const s = snapshot({ supplied: { USDC: 0n, ETH: eth * ETH, BTC: 0n }, debt });
        let plan;
        try {
          plan = await withQuotes(s, false, quote);
        } catch (err) {
          if (err instanceof ExitRefusal) return; // refused: nothing is sent
          throw err;
        }
        let collateral = eth * ETH;
        let left = debt;
        for (const [i, r] of plan.rounds.entries()) {
          collateral -= BigInt(r.units);
          expect(((collateral * 3_000_000_000n) / ETH) * 8_250n).toBeGreaterThanOrEqual(EXIT_HEALTH_BPS * left);
          left -= BigInt(r.repay);
          expect(left, "a round never closes the debt before the max repayment").toBeGreaterThan(0n);
        }
        if (debt > 0n) expect(plan.rounds.reduce((sum, r) => sum + BigInt(r.minOut), 0n)).toBeGreaterThanOrEqual(BigInt(plan.approval));
      }),
      { numRuns: 60 },
    );
  });
});
