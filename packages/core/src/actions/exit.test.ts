/**
 * The exit's plan, pure: where the repayment comes from, the rounds of
 * collateral (each withdrawal leaves the health factor at 1.05 at the oracle's
 * prices, never under), the calls in order, and its refusals. The planned calls
 * as the signer agent decodes them, and the exit's rule over those, are tested on
 * the signer's side (signer-agent/src/exit-calls.test.ts): this package imports
 * nothing of the signer agent.
 */
import fc from "fast-check";
import { decodeFunctionData, maxUint256 } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../../../test/helpers/refusal";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS } from "../contracts/chains";
import { swapRouter02 } from "../contracts/uniswap";
import { exit, ExitRequest } from "./exit";
import { withQuotes, type ExitPlan } from "./exit-plan";
import { EXIT_HEALTH_BPS, ExitRefusal, fromSuppliedUsdc, sizeExit, type ExitSnapshot } from "./exit-sizing";
import { exitSteps } from "./exit-steps";
import { LedgerError } from "../domain/sandbox-ledger";
import { signerRuleContext, type DecodedCall, type SignerIntent, type SwapFloor } from "./signer-rule";
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
const quote = async (symbol: "ETH" | "BTC", units: bigint) =>
  (units * (symbol === "ETH" ? 3_000_000_000n : 60_000_000_000n) * 995n) / (1000n * (symbol === "ETH" ? ETH : 10n ** 8n));
const calls = (steps: ReturnType<typeof exitSteps>) =>
  steps
    .filter((s) => s.to === m.pool)
    .map((s) => decodeFunctionData({ abi: AAVE_POOL_ABI, data: s.data }) as { functionName: string; args: readonly unknown[] });

describe("exit", () => {
  it("with enough USDC in the wallet: one approval and the max repay, then every supply withdrawn with max", async () => {
    const plan = await withQuotes(snapshot({ walletUsdc: 20_000_000_000n, supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 1n } }), false, quote);
    expect(plan.rounds).toEqual([]);
    expect(plan.approval).toBe(String(18_000_000_000n + 18_000_000n + 1n)); // the debt, 0.1% and a unit for interest
    const c = calls(exitSteps(stepContext("base", wallet), plan));
    expect(c.map((x) => x.functionName)).toEqual(["repay", "withdraw", "withdraw"]);
    expect(c[0]!.args).toEqual([m.usdc, maxUint256, 2n, wallet]);
    expect(c.slice(1).map((x) => [x.args[0], x.args[1], x.args[2]])).toEqual([
      [m.weth, maxUint256, wallet],
      [m.btc, maxUint256, wallet],
    ]);
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
    expect([plan.repayWithATokens, plan.approval, plan.rounds, plan.withdrawAll]).toEqual([
      String(s.debt - 1n),
      String(1n + 18_000_000n + 1n),
      [],
      ["USDC", "ETH"],
    ]);
    const c = calls(exitSteps(stepContext("base", wallet), plan));
    expect(c.map((x) => x.functionName)).toEqual(["repayWithATokens", "repay", "withdraw", "withdraw"]);
    expect(c[1]!.args[1]).toBe(maxUint256);
    // under the debt: all of the supply (max), the rest from the wallet; nothing of USDC left to withdraw
    const under = await withQuotes(snapshot({ supplied: { USDC: 5_000_000_000n, ETH: ETH, BTC: 0n }, walletUsdc: 20_000_000_000n }), false, quote);
    expect([under.repayWithATokens, under.withdrawAll]).toEqual(["max", ["ETH"]]);
  });

  it("a round that takes all that is left of an asset says so (withdrawn with max)", () => {
    const { rounds } = sizeExit(
      snapshot({
        supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 0n },
        debt: 1_000_000_000n,
        price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 60_000_000_000n },
      }),
    );
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
    await expect(
      withQuotes(
        snapshot({ debt: 1_000_000_000n, walletUsdc: 990_000_000n, supplied: { USDC: 0n, ETH: ETH, BTC: 0n } }),
        false,
        async (_s, units) => (units * 1_500_000_000n) / ETH,
      ),
    ).rejects.toThrow(/would guarantee/);
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

const router = swapRouter02(m.chainId);
const rule = (cs: DecodedCall[], intent: Partial<SignerIntent> = {}, floors: SwapFloor[] = floorsOf(cs)) =>
  exit.signer.check(cs, { amountMicro: 0n, ...intent }, signerRuleContext("exit", cs, { ...m, router }, 0n, 0n, 200, floors));
/** the signer's own floors, here exactly each swap's bound */
const floorsOf = (cs: DecodedCall[]): SwapFloor[] =>
  cs
    .filter((c) => c.role === "swap")
    .map((c) => ({ token: c.token, tokenOut: c.counterparty!, amountIn: c.amount, floor: (c.args[0] as { amountOutMinimum: bigint }).amountOutMinimum }));
const pos = (debt: bigint, supplied: Partial<Record<`0x${string}`, bigint>> = {}) => ({ debt, supplied: supplied as Record<`0x${string}`, bigint> });

describe("exit: the declaration", () => {
  it("is a free downward leg, read from its body (sell or not), planned on the chain's figures and kept in its params", async () => {
    expect([exit.direction, exit.fee, exit.name, exit.idPrefix, exit.receiptId, exit.status]).toEqual(["down", "none", "exit", "ext", "exit_id", "completed"]);
    expect(exit.params({ sell: true })).toEqual({ sell: true });
    expect(exit.params({ sell: false })).toEqual({});
    expect(exit.params({})).toEqual({});
    expect(ExitRequest.safeParse({ sell: "yes" }).success).toBe(false);
    expect(ExitRequest.safeParse({ amount: 1 }).success).toBe(false);
    const s = snapshot({ walletUsdc: 20_000_000_000n });
    const planned = await exit.planOnChain!({ sell: true }, s, quote);
    expect(planned.sell).toBe(true);
    expect(JSON.parse(planned.exit!)).toEqual(await withQuotes(s, true, quote));
    // its value is the debt it repays; unplanned: nothing
    expect(exit.valueMicro!(planned, () => 1n)).toBe(s.debt);
    expect(exit.valueMicro!({}, () => 1n)).toBe(0n);
    expect(exit.effect({ collateralMicro: 5n, debtMicro: 3n, liquidationThresholdBps: 8000 }, 0n, { feeMicro: 0n, feeBps: 0n, basis: "" })).toEqual({
      collateralMicro: 0n,
      debtMicro: 0n,
      liquidationThresholdBps: 8000,
    });
  });

  it("plans the calls of its planned exit only; its title and receipt say what it does", async () => {
    const c = stepContext("base", wallet);
    expect(() => exit.plan(c, { amountMicro: 0n, feeMicro: 0n, feeRecipient: wallet, params: {} })).toThrow(
      "an exit is planned on the chain's figures first (params.exit)",
    );
    const planned = await exit.planOnChain!({}, snapshot(), quote);
    const plan = JSON.parse(planned.exit!) as ExitPlan;
    expect(exit.plan(c, { amountMicro: 0n, feeMicro: 0n, feeRecipient: wallet, params: planned })).toEqual(exitSteps(c, plan));
    expect(exit.title!({}, 0n)).toBe("exit: repay all USDC debt, withdraw everything supplied");
    expect(exit.title!({ sell: true }, 0n)).toBe("exit: repay all USDC debt, withdraw everything supplied, sell the ETH and BTC for USDC");
    const fee = { feeMicro: 0n, feeBps: 0n, basis: "" };
    const base = { id: "ext_1", amountMicro: 0n, fee, ltvBefore: 0, debtAfterMicro: 0n };
    expect(exit.receipt({ ...base, params: planned, ledger: null })).toEqual({
      exit_id: "ext_1",
      repaid_usdc: 18_000,
      sold: false,
      rounds_from_collateral: plan.rounds.length,
      withdrawn: ["ETH"],
    });
    expect(
      exit.receipt({
        ...base,
        params: { sell: true },
        ledger: { holdings: { btcUnits: 0n, ethUnits: 0n, usdcMicro: 0n, debtMicro: 0n }, bought: {}, repaidMicro: 2_500_000n },
      }),
    ).toEqual({ exit_id: "ext_1", repaid_usdc: 2.5, sold: true });
    expect(exit.onExecuted!({ debtMicro: 1_500_000n })).toEqual({ remaining_borrow: 1.5 });
    expect(exit.cli.body(0, { sell: true })).toEqual({ sell: true });
    expect(exit.cli.body(0, {})).toEqual({});
  });

  it("on a chain: a wallet with nothing on Aave has nothing to exit; any debt or supply is enough; it spends no USDC of the sandbox's", () => {
    const none = { debtMicro: 0n, holdings: { aUsdc: 0n, aWeth: 0n, aBtc: 0n, walletUsdc: 9n } };
    expect(exit.walletNeeds(0n, none, {})).toEqual({
      usdcMicro: 0n,
      refusal: { code: "insufficient_collateral", message: "the wallet has no position on Aave to exit" },
    });
    for (const some of [
      { debtMicro: 1n },
      { holdings: { ...none.holdings, aUsdc: 1n } },
      { holdings: { ...none.holdings, aWeth: 1n } },
      { holdings: { ...none.holdings, aBtc: 1n } },
    ]) {
      expect(exit.walletNeeds(0n, { ...none, ...some }, {})).toEqual({ usdcMicro: 0n });
    }
    expect(exit.sandboxUsdcMicro(5n)).toBe(0n);
  });

  it("on a ledger: the idle USDC repays first, then ETH, then BTC at the sandbox's prices; the rest is withdrawn (or sold); nothing held, or too little, is refused", () => {
    const h = (over: Partial<{ btcUnits: bigint; ethUnits: bigint; usdcMicro: bigint; debtMicro: bigint }>) => ({
      btcUnits: 0n,
      ethUnits: 0n,
      usdcMicro: 0n,
      debtMicro: 0n,
      ...over,
    });
    expect(() => exit.ledger(h({ usdcMicro: 5n }), 0n, 0n, {})).toThrow("the treasury holds nothing to exit");
    // 1,000 USDC of debt, 400 idle: 600 from ETH at 3,000 = 0.2 ETH; 0.3 ETH withdrawn
    const r = exit.ledger(h({ usdcMicro: 400_000_000n, debtMicro: 1_000_000_000n, ethUnits: ETH / 2n, btcUnits: 10n ** 8n }), 0n, 0n, {});
    expect(r).toEqual({ holdings: h({}), bought: {}, repaidMicro: 1_000_000_000n });
    // the idle USDC alone covers it: what is left stays idle
    expect(exit.ledger(h({ usdcMicro: 1_500_000_000n, debtMicro: 1_000_000_000n, ethUnits: 1n }), 0n, 0n, {}).holdings).toEqual(h({ usdcMicro: 500_000_000n }));
    // ETH is short: BTC pays the rest, its fill's change stays as idle USDC; with sell, the rest of the collateral is sold too
    const mixed = h({ debtMicro: 4_000_000_000n, ethUnits: ETH, btcUnits: 10n ** 8n });
    const sold = exit.ledger(mixed, 0n, 0n, { sell: true });
    expect(sold.holdings).toEqual(h({ usdcMicro: 60_000_000_000n + 3_000_000_000n - 4_000_000_000n }));
    // without a sale: BTC for 1,000 USDC is 0.01666667 BTC (rounded up), its value over the debt left stays idle
    expect(exit.ledger(mixed, 0n, 0n, {}).holdings).toEqual(h({ usdcMicro: (1_666_667n * 60_000_000_000n) / 10n ** 8n - 1_000_000_000n }));
    expect(() => exit.ledger(h({ debtMicro: 4_000_000_000n, ethUnits: ETH }), 0n, 0n, {})).toThrow("the collateral does not cover the debt: 1000 USDC short");
  });
});

describe("exit: the edges of its plan and of its rule", () => {
  const debt = 18_000_000_000n;
  const buffer = debt / 1_000n + 1n;

  it("the supplied USDC: max when it covers the debt and the buffer; all but one unit within the buffer (the debt itself included); max of all of it under the debt", () => {
    const at = (usdc: bigint) => fromSuppliedUsdc(snapshot({ supplied: { USDC: usdc, ETH: 0n, BTC: 0n } }));
    expect(at(debt + buffer)).toEqual({ call: "max", repaid: debt, left: 0n, usdcLeftSupplied: true });
    expect(at(debt + buffer - 1n)).toEqual({ call: debt - 1n, repaid: debt - 1n, left: 1n, usdcLeftSupplied: true });
    expect(at(debt)).toEqual({ call: debt - 1n, repaid: debt - 1n, left: 1n, usdcLeftSupplied: true });
    expect(at(debt - 1n)).toEqual({ call: "max", repaid: debt - 1n, left: 1n, usdcLeftSupplied: false });
    expect(at(0n)).toEqual({ call: 0n, repaid: 0n, left: debt, usdcLeftSupplied: false });
    expect(fromSuppliedUsdc(snapshot({ debt: 0n, supplied: { USDC: 5n, ETH: 0n, BTC: 0n } }))).toEqual({
      call: 0n,
      repaid: 0n,
      left: 0n,
      usdcLeftSupplied: true,
    });
  });

  it("the order of the rounds follows the liquidation thresholds, whichever asset is lower; an asset with nothing supplied needs no price", () => {
    const both = { USDC: 0n, ETH: 10n * ETH, BTC: 10n ** 8n };
    expect(sizeExit(snapshot({ supplied: both, lt: { USDC: 7_800n, ETH: 7_000n, BTC: 8_000n } })).rounds[0]!.symbol).toBe("ETH");
    expect(sizeExit(snapshot({ supplied: both, lt: { USDC: 7_800n, ETH: 8_000n, BTC: 7_000n } })).rounds[0]!.symbol).toBe("BTC");
    expect(sizeExit(snapshot({ price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 0n } })).rounds.every((r) => r.symbol === "ETH")).toBe(true);
  });

  it("refusals say why, with the health factor they keep: too close, too many rounds, a pool too far under", async () => {
    expect(() => sizeExit(snapshot({ debt: 25_000_000_000n }))).toThrow(
      "the position is too close to liquidation to withdraw collateral first (health factor under 1.05): repay some USDC from the wallet, then exit",
    );
    // just above 1.05: each round may take only a little, and eight do not reach the debt
    expect(() => sizeExit(snapshot({ debt: 23_000_000_000n }))).toThrow(
      "the exit needs more than 8 rounds of selling collateral: repay some USDC from the wallet first",
    );
    await expect(withQuotes(snapshot(), false, async (_s, units) => (units * 2_000_000_000n) / ETH)).rejects.toThrow(
      "the pool's prices are too far under the oracle's for the rounds to keep the health factor at 1.05: repay some USDC from the wallet first",
    );
  });

  it("an asset a round took whole is neither withdrawn again nor sold; no sale of an asset not supplied; no sale unless asked", async () => {
    const s = snapshot({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 5_000_000n }, lt: { USDC: 7_800n, ETH: 8_250n, BTC: 0n }, debt: 5_000_000_000n });
    const plan = await withQuotes(s, true, quote);
    expect(plan.rounds[0]).toMatchObject({ symbol: "BTC", all: true });
    expect(plan.withdrawAll).toEqual(["ETH"]);
    expect(plan.sales.map((x) => x.symbol)).toEqual(["ETH"]);
    const ethOnly = await withQuotes(snapshot({ walletUsdc: 20_000_000_000n }), true, quote);
    expect(ethOnly.sales.map((x) => x.symbol)).toEqual(["ETH"]);
    const planned = JSON.parse((await exit.planOnChain!({}, snapshot({ walletUsdc: 20_000_000_000n }), quote)).exit!) as ExitPlan;
    expect(planned.sales).toEqual([]);
    // a sale's swap says its bound
    const steps = exitSteps(stepContext("base", wallet), ethOnly);
    expect(steps.at(-1)!.summary.description).toMatch(/\(1% below the pool's quote\) in the 0.05% pool$/);
  });

  it("on a ledger: collateral alone (no debt) is withdrawn; debt paid by idle USDC alone is closed; the refusal is a ledger error with its code", () => {
    const h = (over: Partial<{ btcUnits: bigint; ethUnits: bigint; usdcMicro: bigint; debtMicro: bigint }>) => ({
      btcUnits: 0n,
      ethUnits: 0n,
      usdcMicro: 0n,
      debtMicro: 0n,
      ...over,
    });
    expect(exit.ledger(h({ ethUnits: 1n }), 0n, 0n, {}).holdings).toEqual(h({}));
    expect(exit.ledger(h({ btcUnits: 1n }), 0n, 0n, {}).holdings).toEqual(h({}));
    expect(exit.ledger(h({ debtMicro: 5n, usdcMicro: 7n }), 0n, 0n, {})).toEqual({ holdings: h({ usdcMicro: 2n }), bought: {}, repaidMicro: 5n });
    for (const [held, code] of [
      [h({}), "insufficient_balance"],
      [h({ debtMicro: 5n }), "insufficient_balance"],
    ] as const) {
      try {
        exit.ledger(held, 0n, 0n, {});
        throw new Error("expected a refusal");
      } catch (e) {
        expect(e).toBeInstanceOf(LedgerError);
        expect((e as LedgerError).code).toBe(code);
      }
    }
    // unplanned and without a ledger: nothing is said to be repaid
    expect(
      exit.receipt({ id: "ext_2", amountMicro: 0n, fee: { feeMicro: 0n, feeBps: 0n, basis: "" }, params: {}, ledger: null, ltvBefore: 0, debtAfterMicro: 0n }),
    ).toEqual({ exit_id: "ext_2", repaid_usdc: 0, sold: false });
  });

  describe("the rule, on envelopes a tampering gateway could send", () => {
    const usdcApproval = (amount: bigint): DecodedCall => ({
      functionName: "approve",
      role: "approve",
      args: [],
      to: m.usdc,
      token: m.usdc,
      amount,
      counterparty: m.pool,
      usdcMoved: 0n,
    });
    const maxRepay: DecodedCall = { functionName: "repay", role: "repay", args: [], to: m.pool, token: m.usdc, amount: maxUint256, usdcMoved: 0n };
    const w = (amount: bigint): DecodedCall => ({ functionName: "withdraw", role: "withdraw", args: [], to: m.pool, token: m.weth, amount, usdcMoved: 0n });
    const sw = (amount: bigint): DecodedCall => ({
      functionName: "exactInputSingle",
      role: "swap",
      args: [{ amountOutMinimum: 1n }],
      to: router,
      token: m.weth,
      amount,
      counterparty: m.usdc,
      usdcMoved: 0n,
    });
    const sold = "a withdrawal before the exit's last repayment must be sold at once for the same units";
    const position = pos(1_000n, { [m.weth]: 10_000n });

    it("a withdrawal before the closing repayment with no sale after it at all", () => {
      expect(refusalOf(() => rule([w(5n), usdcApproval(10n), maxRepay], { position }))).toBe(sold);
    });

    it("a withdrawal followed by another withdrawal of the same units (the sale of one of them missing)", () => {
      expect(refusalOf(() => rule([w(5n), w(5n), sw(5n), usdcApproval(10n), maxRepay], { position }))).toBe(sold);
    });

    it("a second sale of one withdrawal (units the wallet held before, sold ahead of the repayment)", () => {
      expect(refusalOf(() => rule([w(5n), sw(5n), sw(5n), usdcApproval(10n), maxRepay], { position }))).toBe(
        "a swap before the exit's last repayment must sell a withdrawal",
      );
    });

    it("a max withdrawal sold for exactly the supply less 0.1% passes, one unit less is refused", () => {
      expect(rule([w(maxUint256), sw(9_990n), usdcApproval(10n), maxRepay], { position })).toBe(4);
      expect(refusalOf(() => rule([w(maxUint256), sw(9_989n), usdcApproval(10n), maxRepay], { position }))).toBe(sold);
    });
  });
});
