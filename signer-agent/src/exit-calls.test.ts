/**
 * The exit's planned calls (@treasury/core/actions/exit) as the signer agent
 * decodes them from their calldata (checkStep, its own decoder), and the exit's
 * rule (`exit.signer.check`) over what it decoded. The plan alone is tested
 * beside it in the core package (packages/core/src/actions/exit.test.ts); this
 * half needs the signer's decoder, which the core package may not import.
 */
import { maxUint256 } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../test/helpers/refusal";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { swapRouter02 } from "@treasury/core/contracts/uniswap";
import { exit } from "@treasury/core/actions/exit";
import { withQuotes, type ExitPlan } from "@treasury/core/actions/exit-plan";
import type { ExitSnapshot } from "@treasury/core/actions/exit-sizing";
import { exitSteps } from "@treasury/core/actions/exit-steps";
import { signerRuleContext, type DecodedCall, type SignerIntent, type SwapFloor } from "@treasury/core/actions/signer-rule";
import { minOutOf, repay as repayCall, stepContext } from "@treasury/core/actions/steps";
import { checkStep, defaultPolicy } from "./policy";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const m = AAVE_MARKETS.base;
const policy = { ...defaultPolicy([]), per_transaction_cap_usdc: 1_000_000 };
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

/** the planned calls as the signer decodes them from their calldata (signer-agent's own decoder) */
const decoded = (steps: ReturnType<typeof exitSteps>): DecodedCall[] =>
  steps.map((s) => checkStep(policy, { chain_id: m.chainId, to: s.to, data: s.data, value: "0" }, wallet));
const router = swapRouter02(m.chainId);
const rule = (cs: DecodedCall[], intent: Partial<SignerIntent> = {}, floors: SwapFloor[] = floorsOf(cs)) =>
  exit.signer.check(cs, { amountMicro: 0n, ...intent }, signerRuleContext("exit", cs, { ...m, router }, 0n, 0n, 200, floors));
/** the signer's own floors, here exactly each swap's bound */
const floorsOf = (cs: DecodedCall[]): SwapFloor[] =>
  cs
    .filter((c) => c.role === "swap")
    .map((c) => ({ token: c.token, tokenOut: c.counterparty!, amountIn: c.amount, floor: (c.args[0] as { amountOutMinimum: bigint }).amountOutMinimum }));
const pos = (debt: bigint, supplied: Partial<Record<`0x${string}`, bigint>> = {}) => ({ debt, supplied: supplied as Record<`0x${string}`, bigint> });

describe("exit: its calls in order", () => {
  it("from collateral: each round withdraws (the first Pool call is the main one), approves the router and swaps its units for USDC to the wallet, approves and repays what it guarantees; the last approval covers the debt left", async () => {
    const plan = await withQuotes(snapshot(), false, quote);
    const steps = exitSteps(stepContext("base", wallet), plan);
    expect(steps.filter((s) => s.main)).toHaveLength(1);
    expect(steps[0]).toMatchObject({ main: true, kind: "pool_call", to: m.pool });
    const cs = decoded(steps);
    let i = 0;
    for (const [n, r] of plan.rounds.entries()) {
      expect([cs[i]!.functionName, cs[i]!.token, cs[i]!.amount]).toEqual(["withdraw", m.weth, r.all ? maxUint256 : BigInt(r.units)]);
      expect([cs[i + 1]!.functionName, cs[i + 1]!.token, cs[i + 1]!.counterparty, cs[i + 1]!.amount]).toEqual(["approve", m.weth, router, BigInt(r.units)]);
      expect([
        cs[i + 2]!.role,
        cs[i + 2]!.to,
        cs[i + 2]!.counterparty,
        cs[i + 2]!.amount,
        (cs[i + 2]!.args[0] as { amountOutMinimum: bigint }).amountOutMinimum,
      ]).toEqual(["swap", router, m.usdc, BigInt(r.units), BigInt(r.minOut)]);
      expect(steps[i + 2]!.summary.description).toContain("1% below the pool's quote");
      i += 3;
      if (n < plan.rounds.length - 1 && BigInt(r.repay) > 0n) {
        expect([cs[i]!.functionName, cs[i]!.token, cs[i]!.counterparty, cs[i]!.amount]).toEqual(["approve", m.usdc, m.pool, BigInt(r.repay)]);
        expect([cs[i + 1]!.functionName, cs[i + 1]!.amount]).toEqual(["repay", BigInt(r.repay)]);
        i += 2;
      }
    }
    expect([cs[i]!.functionName, cs[i]!.token, cs[i]!.counterparty, cs[i]!.amount]).toEqual(["approve", m.usdc, m.pool, BigInt(plan.approval)]);
    expect([cs[i + 1]!.functionName, cs[i + 1]!.amount]).toEqual(["repay", maxUint256]);
    expect(cs.slice(i + 2).map((c) => [c.functionName, c.token, c.amount])).toEqual(
      plan.withdrawAll.map((a) => ["withdraw", a === "ETH" ? m.weth : a === "BTC" ? m.btc : m.usdc, maxUint256]),
    );
  });

  it("with a sale: after everything is withdrawn, each volatile asset left is approved and swapped for at least its bound; without debt nothing is repaid", async () => {
    const plan = await withQuotes(snapshot({ debt: 0n, supplied: { USDC: 5n, ETH: ETH, BTC: 10n ** 8n } }), true, quote);
    expect([plan.repayWithATokens, plan.approval, plan.rounds, plan.withdrawAll]).toEqual(["0", "0", [], ["USDC", "ETH", "BTC"]]);
    expect(plan.sales).toEqual([
      { symbol: "ETH", units: String(ETH), minOut: String(minOutOf(await quote("ETH", ETH))) },
      { symbol: "BTC", units: String(10n ** 8n), minOut: String(minOutOf(await quote("BTC", 10n ** 8n))) },
    ]);
    const cs = decoded(exitSteps(stepContext("base", wallet), plan));
    expect(cs.map((c) => `${c.functionName}:${c.token}`)).toEqual([
      `withdraw:${m.usdc}`,
      `withdraw:${m.weth}`,
      `withdraw:${m.btc}`,
      `approve:${m.weth}`,
      `exactInputSingle:${m.weth}`,
      `approve:${m.btc}`,
      `exactInputSingle:${m.btc}`,
    ]);
    expect(rule(cs, { sell: true, position: pos(0n) })).toBe(7);
    // the same plan, no sale asked: the swaps after the last repayment are refused
    expect(refusalOf(() => rule(cs, { position: pos(0n) }))).toBe("the exit sells collateral after its last repayment, and no sale was asked");
  });

  it("a bounded repayWithATokens names its units; Arbitrum's steps go to Arbitrum's Pool", async () => {
    const plan = await withQuotes(snapshot({ supplied: { USDC: 18_000_000_001n, ETH: 0n, BTC: 0n }, walletUsdc: 20_000_000n }), false, quote);
    const cs = decoded(exitSteps(stepContext("base", wallet), plan));
    expect([cs[0]!.functionName, cs[0]!.amount]).toEqual(["repayWithATokens", 17_999_999_999n]);
    const arb = AAVE_MARKETS.arbitrum;
    expect(exitSteps(stepContext("arbitrum", wallet), plan).every((s) => s.to === arb.pool || s.to === arb.usdc)).toBe(true);
  });
});

describe("exit: the signer's rule over the decoded calls", () => {
  it("passes the planned exits: from collateral, from the wallet's USDC, from the supplied USDC that covers the debt", async () => {
    const fromCollateral = decoded(exitSteps(stepContext("base", wallet), await withQuotes(snapshot(), false, quote)));
    expect(rule(fromCollateral, { position: pos(18_000_000_000n, { [m.weth]: 10n * ETH }) })).toBe(fromCollateral.length);
    // without a position read, with a floor the signer knows
    expect(rule(fromCollateral)).toBe(fromCollateral.length);
    const fromWallet = decoded(exitSteps(stepContext("base", wallet), await withQuotes(snapshot({ walletUsdc: 20_000_000_000n }), false, quote)));
    expect(rule(fromWallet, { position: pos(18_000_000_000n) })).toBe(3);
    const fromSupply = decoded(
      exitSteps(stepContext("base", wallet), await withQuotes(snapshot({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } }), false, quote)),
    );
    expect(rule(fromSupply, { position: pos(18_000_000_000n, { [m.usdc]: 20_000_000_000n }) })).toBe(3);
  });

  it("repayWithATokens max closes the debt only when the supplied USDC the signer reads covers it with room for interest", async () => {
    const cs = decoded(
      exitSteps(stepContext("base", wallet), await withQuotes(snapshot({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } }), false, quote)),
    );
    const debt = 18_000_000_000n;
    const buffer = debt / 1_000n + 1n;
    expect(rule(cs, { position: pos(debt, { [m.usdc]: debt + buffer }) })).toBe(3);
    const why = "the supplied USDC does not cover the debt: the exit's last repayment must be all of the debt from the wallet (repay type(uint256).max)";
    expect(refusalOf(() => rule(cs, { position: pos(debt, { [m.usdc]: debt + buffer - 1n }) }))).toBe(why);
    expect(refusalOf(() => rule(cs, { position: pos(debt) }))).toBe(why);
    expect(refusalOf(() => rule(cs))).toBe(why);
    // no debt left to close: nothing to cover
    expect(rule(cs, { position: pos(0n) })).toBe(3);
  });

  it("must close the debt: its last repay is all of it (max); without one, with debt, refused; without debt, withdrawals alone pass", async () => {
    const plan = await withQuotes(snapshot({ walletUsdc: 20_000_000_000n }), false, quote);
    const cs = decoded(exitSteps(stepContext("base", wallet), plan));
    const bounded = decoded(
      exitSteps(stepContext("base", wallet), plan).map((s, i) => (i === 1 ? repayCall(stepContext("base", wallet), 18_000_000_000n, true) : s)),
    );
    expect(refusalOf(() => rule(bounded, { position: pos(18_000_000_000n) }))).toBe(
      "the last repayment of an exit must be all of the debt (type(uint256).max)",
    );
    const withdrawOnly = cs.filter((c) => c.role === "withdraw");
    expect(refusalOf(() => rule(withdrawOnly, { position: pos(1n, { [m.weth]: 10n * ETH }) }))).toBe(
      "the exit does not repay all of the debt (no type(uint256).max repayment)",
    );
    expect(refusalOf(() => rule(withdrawOnly))).toBe("the exit does not repay all of the debt (no type(uint256).max repayment)");
    expect(rule(withdrawOnly, { position: pos(0n) })).toBe(1);
    // a repayment after the closing one
    const closing = cs.findIndex((c) => c.functionName === "repay");
    expect(refusalOf(() => rule([...cs, { ...cs[closing]!, functionName: "repayWithATokens" }], { position: pos(1n) }))).toBe(
      "a repayment after the exit's last one",
    );
  });

  it("refuses what an exit never does: a supply, a borrow, a fee, a repay of another asset", async () => {
    const c = stepContext("base", wallet);
    const plan = await withQuotes(snapshot({ walletUsdc: 20_000_000_000n }), false, quote);
    const cs = decoded(exitSteps(c, plan));
    const extra = (d: DecodedCall) => refusalOf(() => rule([...cs, d], { position: pos(1n) }));
    expect(extra({ ...cs[0]!, functionName: "supply", role: "supply" })).toBe("an exit has no supply");
    expect(extra({ ...cs[0]!, functionName: "borrow", role: "borrow" })).toBe("an exit has no borrow");
    expect(extra({ ...cs[0]!, functionName: "transfer", role: "fee" })).toBe("an exit has no fee");
    expect(
      refusalOf(() =>
        rule(
          cs.map((x) => (x.role === "repay" ? { ...x, token: m.weth } : x)),
          { position: pos(1n) },
        ),
      ),
    ).toBe("an exit repays USDC only");
  });

  it("before the closing repayment, every withdrawal is sold at once for its units and every swap sells a withdrawal", async () => {
    const plan = await withQuotes(snapshot(), false, quote);
    const cs = decoded(exitSteps(stepContext("base", wallet), plan));
    const position = pos(18_000_000_000n, { [m.weth]: 10n * ETH });
    const firstSwap = cs.findIndex((c) => c.role === "swap");
    const sold = "a withdrawal before the exit's last repayment must be sold at once for the same units";
    // the swap sells fewer units than were withdrawn (the rest would stay in the wallet, unrepaid)
    const fewer = cs.map((c, i) => (i === firstSwap ? { ...c, amount: c.amount - 1n } : c));
    expect(refusalOf(() => rule(fewer, { position }, floorsOf(fewer)))).toBe(sold);
    // another token sold after the withdrawal
    expect(
      refusalOf(() =>
        rule(
          cs.map((c, i) => (i === firstSwap ? { ...c, token: m.btc } : c)),
          { position },
          floorsOf(cs.map((c, i) => (i === firstSwap ? { ...c, token: m.btc } : c))),
        ),
      ),
    ).toBe(sold);
    // a withdrawal followed by another withdrawal, not by its sale
    const withoutSwap = cs.filter((_, i) => i !== firstSwap);
    expect(refusalOf(() => rule(withoutSwap, { position }))).toBe(sold);
    // a swap of nothing withdrawn before the closing repayment
    const swapFirst = [cs[firstSwap]!, ...cs];
    expect(refusalOf(() => rule(swapFirst, { position }))).toBe("a swap before the exit's last repayment must sell a withdrawal");
  });

  it("a max withdrawal before the closing repayment passes only when its sale is about all of the supply the signer reads", async () => {
    // 0.05 BTC supplied but not collateral: the first round takes all of it (max)
    const plan = await withQuotes(
      snapshot({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 5_000_000n }, lt: { USDC: 7_800n, ETH: 8_250n, BTC: 0n }, debt: 5_000_000_000n }),
      false,
      quote,
    );
    expect(plan.rounds[0]).toMatchObject({ symbol: "BTC", all: true });
    const cs = decoded(exitSteps(stepContext("base", wallet), plan));
    expect([cs[0]!.functionName, cs[0]!.token, cs[0]!.amount]).toEqual(["withdraw", m.btc, maxUint256]);
    const units = BigInt(plan.rounds[0]!.units);
    const position = (btc?: bigint) => pos(5_000_000_000n, { [m.weth]: 10n * ETH, ...(btc === undefined ? {} : { [m.btc]: btc }) });
    expect(rule(cs, { position: position(units) })).toBe(cs.length);
    // the supply read has grown by the interest of 0.1%: still about all of it
    expect(rule(cs, { position: position(units + units / 1_000n) })).toBe(cs.length);
    const sold = "a withdrawal before the exit's last repayment must be sold at once for the same units";
    // 0.2% more supplied than the swap sells: the rest would leave Aave unsold, before the debt is repaid
    expect(refusalOf(() => rule(cs, { position: position(units + units / 500n) }))).toBe(sold);
    // no supply read: a max withdrawal cannot be bounded
    expect(refusalOf(() => rule(cs, { position: position() }))).toBe(sold);
  });

  it("after the closing repayment: withdrawals of everything (max) only, sales only when asked", async () => {
    const cs = decoded(exitSteps(stepContext("base", wallet), await withQuotes(snapshot({ walletUsdc: 20_000_000_000n }), false, quote)));
    const partial = cs.map((c, i) => (i === 2 ? { ...c, amount: 5n } : c));
    expect(refusalOf(() => rule(partial, { position: pos(1n) }))).toBe("after the exit's last repayment, only withdrawals of everything (type(uint256).max)");
  });

  it("each swap sells for USDC at no less than the signer's own floor; approvals only of USDC to the Pool, or to the router", async () => {
    const cs = decoded(exitSteps(stepContext("base", wallet), await withQuotes(snapshot(), false, quote)));
    const position = pos(18_000_000_000n, { [m.weth]: 10n * ETH });
    const floors = floorsOf(cs);
    const higher = floors.map((f, i) => (i === 0 ? { ...f, floor: f.floor + 1n } : f));
    expect(refusalOf(() => rule(cs, { position }, higher))).toMatch(
      /^the exit's swap accepts as little as [\d.]+ USDC, under the [\d.]+ USDC the policy's maximum slippage allows$/,
    );
    expect(refusalOf(() => rule(cs, { position }, floors.slice(1)))).toBe("no quote of its own for the exit's swap: not signed");
    const swap = cs.findIndex((c) => c.role === "swap");
    const forWeth = cs.map((c, i) => (i === swap ? { ...c, counterparty: m.btc } : c));
    expect(refusalOf(() => rule(forWeth, { position }, floorsOf(forWeth)))).toBe("an exit's swaps sell for USDC only");
    const approval = cs.findIndex((c) => c.role === "approve");
    expect(
      refusalOf(() =>
        rule(
          cs.map((c, i) => (i === approval ? { ...c, counterparty: wallet } : c)),
          { position },
        ),
      ),
    ).toBe("an exit approves the Pool and the router only");
    expect(
      refusalOf(() =>
        rule(
          cs.map((c, i) => (i === approval ? { ...c, counterparty: m.pool } : c)),
          { position },
        ),
      ),
    ).toBe("an exit approves only USDC to the Pool (its repayments)");
  });
});

describe("exit: the edges of its plan and of its rule", () => {
  it("the last round's USDC goes to the last repayment: a plan whose last round names a repayment repays it only through the max repay", () => {
    const plan: ExitPlan = {
      debt: "100",
      repayWithATokens: "0",
      approval: "110",
      rounds: [{ symbol: "ETH", units: "5", all: false, minOut: "60", repay: "50" }],
      withdrawAll: ["ETH"],
      sales: [],
    };
    const fns = decoded(exitSteps(stepContext("base", wallet), plan)).map((c) => c.functionName);
    expect(fns).toEqual(["withdraw", "approve", "exactInputSingle", "approve", "repay", "withdraw"]);
    const two: ExitPlan = { ...plan, rounds: [{ ...plan.rounds[0]!, repay: "0" }, plan.rounds[0]!] };
    expect(decoded(exitSteps(stepContext("base", wallet), two)).map((c) => c.functionName)).toEqual([
      "withdraw",
      "approve",
      "exactInputSingle",
      "withdraw",
      "approve",
      "exactInputSingle",
      "approve",
      "repay",
      "withdraw",
    ]);
  });
});
