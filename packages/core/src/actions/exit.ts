/**
 * exit: close the position. Free (a downward leg). Every USDC of debt is repaid
 * (the last repay is Aave's type(uint256).max, so no dust of interest remains,
 * whatever accrued between the envelope and the signature), then every supplied
 * asset is withdrawn with type(uint256).max (zero aTokens), and optionally the
 * ETH and BTC are sold for USDC. It ends with zero debt and zero aTokens.
 *
 * Where the repayment comes from, in this order:
 *   1. the supplied USDC (repayWithATokens, as much as the debt needs: it never
 *      lowers the health factor while it is above USDC's liquidation threshold);
 *   2. the wallet's own USDC;
 *   3. the collateral, in rounds, the lowest liquidation threshold first (the
 *      most value per unit of health factor given up): each round withdraws at
 *      most what leaves the health factor at EXIT_HEALTH (1.05) at the oracle's
 *      prices, swaps it for USDC (bounded 1% under the pool's quote) and repays
 *      what the swap guarantees. Only a withdrawal lowers the health factor, and
 *      each stops at 1.05, so Aave's liquidation threshold is never crossed.
 *
 * The plan is made on the chain's figures when the action is planned
 * (`exitSnapshot` in the service: exact debt and aToken units, the wallet's
 * USDC, oracle prices, liquidation thresholds) and kept in the envelope's params
 * (`exit`), so the calls are the ones planned.
 */
import { ASSETS, type AssetSymbol } from "../domain/assets";
import { formatDecimal, minBig, usdcToNumber, type Micro } from "../domain/money";
import { closed } from "../domain/position";
import { LedgerError, type ActionParams } from "../domain/sandbox-ledger";
import { z } from "../schemas/zod";
import { PlanRefusal, type ActionDeclaration, type MarketSnapshot } from "./declaration";
import {
  ALL,
  approve,
  minOutOf,
  POOL_NAME,
  repay as repayCall,
  repayWithATokens,
  ROUTER_NAME,
  swapExactIn,
  tokenOf,
  withdraw as withdrawCall,
  type PlannedStep,
  type StepContext,
} from "./steps";
import { swapRouter02 } from "../contracts/uniswap";

/** the health factor each withdrawal of collateral stops at, in basis points (1.05) */
export const EXIT_HEALTH_BPS = 10_500n;
/** how much under the oracle's value a round's swap is sized to return (the 1% bound, the pool's fee and its price impact) */
export const EXIT_SIZING_HAIRCUT_BPS = 300n;
/** the repayment's approval covers the debt planned plus this (interest until the envelope is signed), plus 1 unit */
export const EXIT_DEBT_BUFFER_BPS = 10n;
/** at most this many rounds of selling collateral */
export const EXIT_MAX_ROUNDS = 8;

export const ExitRequest = z
  .strictObject({
    sell: z.boolean().optional().openapi({
      description: "also sell the ETH and BTC withdrawn for USDC (each swap bounded 1% under the pool's quote); default false: they stay in the wallet",
    }),
  })
  .openapi("ExitRequest", { description: "close the position: repay all debt, withdraw everything supplied, optionally sell it" });

type Volatile = "ETH" | "BTC";

/** what the chain says of the wallet when the exit is planned: exact units, oracle prices (micro-USDC per whole unit), liquidation thresholds (bps) */
export type ExitSnapshot = MarketSnapshot;

/** one round: collateral withdrawn (all of it, or some units), swapped for at least `minOut` USDC, `repay` of it repaid (0 in the last round: its USDC goes to the last repayment) */
export interface ExitRound {
  symbol: Volatile;
  units: string;
  all: boolean;
  minOut: string;
  repay: string;
}

/** the exit as planned (JSON-safe: kept in the envelope's params) */
export interface ExitPlan {
  /** the debt when planned, USDC units */
  debt: string;
  /** what the supplied USDC repays first: "max" (all of it, or all of the debt when it covers it with room for interest), some units, or "0" */
  repayWithATokens: string;
  /** the last repayment's approval (the debt left after the supplied USDC, plus the buffer), 0 without debt left */
  approval: string;
  rounds: ExitRound[];
  /** assets still supplied after the rounds: withdrawn with type(uint256).max */
  withdrawAll: AssetSymbol[];
  /** with `sell`: the ETH and BTC withdrawn at the end, swapped for at least `minOut` USDC */
  sales: { symbol: Volatile; units: string; minOut: string }[];
}

const valueOf = (s: AssetSymbol, units: bigint, price: bigint) => (units * price) / 10n ** BigInt(ASSETS[s].decimals);
const unitsFor = (s: AssetSymbol, micro: bigint, price: bigint) => (micro * 10n ** BigInt(ASSETS[s].decimals)) / price;
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
const VOLATILE = ["ETH", "BTC"] as const;

export class ExitRefusal extends PlanRefusal {}

/** interest that may accrue on the debt between the plan and the signature, plus a unit */
const bufferOf = (debt: bigint) => (debt * EXIT_DEBT_BUFFER_BPS) / 10_000n + 1n;

/**
 * What the supplied USDC repays, so that the last repayment (type(uint256).max) always finds debt and the
 * supplied USDC never leaves dust: when it covers the debt with room for interest, repayWithATokens max
 * closes the debt; under the debt, max takes all of it (it stays under the debt: the debt's interest outruns
 * the supply's); in between (within the interest of the debt) a bounded repay of all but one unit, the rest
 * from the wallet, so that either way round no repayment meets a debt already closed.
 */
export function fromSuppliedUsdc(s: ExitSnapshot): { call: "max" | bigint; repaid: bigint; left: bigint; usdcLeftSupplied: boolean } {
  const a = s.supplied.USDC;
  if (a === 0n || s.debt === 0n) return { call: 0n, repaid: 0n, left: s.debt, usdcLeftSupplied: a > 0n };
  if (a >= s.debt + bufferOf(s.debt)) return { call: "max", repaid: s.debt, left: 0n, usdcLeftSupplied: true };
  if (a < s.debt) return { call: "max", repaid: a, left: s.debt - a, usdcLeftSupplied: false };
  return { call: s.debt - 1n, repaid: s.debt - 1n, left: 1n, usdcLeftSupplied: true };
}

/**
 * The rounds an exit needs, sized on the oracle's prices (a swap's minimum out is then set from the pool's
 * quote: `withQuotes`). Pure: the order and the amounts that never cross Aave's liquidation threshold.
 */
export function sizeExit(s: ExitSnapshot): { needed: bigint; rounds: { symbol: Volatile; units: bigint; all: boolean }[] } {
  for (const a of VOLATILE)
    if (s.supplied[a] > 0n && s.price[a] <= 0n) throw new ExitRefusal(`the oracle gives ${a} no price: an exit cannot be planned on it`);
  const { left } = fromSuppliedUsdc(s);
  const needed = left === 0n ? 0n : left + bufferOf(s.debt);
  const remaining: Record<Volatile, bigint> = { ETH: s.supplied.ETH, BTC: s.supplied.BTC };
  const rounds: { symbol: Volatile; units: bigint; all: boolean }[] = [];
  // what the collateral still counts for toward Aave's health factor (micro-USDC x bps), and the debt it carries
  let weighted = VOLATILE.reduce((sum, a) => sum + valueOf(a, remaining[a], s.price[a]) * s.lt[a], 0n);
  let debt = left;
  let short = needed - minBig(needed, s.walletUsdc);
  const order = VOLATILE.filter((a) => remaining[a] > 0n).sort((a, b) => (s.lt[a] < s.lt[b] ? -1 : s.lt[a] > s.lt[b] ? 1 : 0));
  while (short > 0n && rounds.length < EXIT_MAX_ROUNDS) {
    const symbol = order.find((a) => remaining[a] > 0n);
    if (!symbol) throw new ExitRefusal(`the collateral does not cover the debt: ${formatDecimal(short, 6)} USDC more is needed in the wallet`);
    const have = valueOf(symbol, remaining[symbol], s.price[symbol]);
    // the most this withdrawal may take and leave the health factor at EXIT_HEALTH: (weighted - h x debt) / lt;
    // a supply that is not collateral (lt 0) leaves the health factor where it is
    const room = s.lt[symbol] === 0n ? have : (weighted - EXIT_HEALTH_BPS * debt) / s.lt[symbol];
    if (room <= 0n)
      throw new ExitRefusal(
        `the position is too close to liquidation to withdraw collateral first (health factor under ${Number(EXIT_HEALTH_BPS) / 10_000}): repay some USDC from the wallet, then exit`,
      );
    const want = ceilDiv(short * 10_000n, 10_000n - EXIT_SIZING_HAIRCUT_BPS);
    const take = minBig(have, minBig(room, want));
    // bounded by the health factor: rounded down (never past 1.05); sized to the need: rounded up (its value covers it)
    const byRoom = take === room && room < want;
    const units =
      take === have
        ? remaining[symbol]
        : byRoom
          ? unitsFor(symbol, take, s.price[symbol])
          : minBig(remaining[symbol], ceilDiv(take * 10n ** BigInt(ASSETS[symbol].decimals), s.price[symbol]));
    if (units === 0n) throw new ExitRefusal("the collateral left is too small to sell");
    const all = units === remaining[symbol];
    const value = all ? have : valueOf(symbol, units, s.price[symbol]);
    rounds.push({ symbol, units, all });
    const out = (value * (10_000n - EXIT_SIZING_HAIRCUT_BPS)) / 10_000n;
    remaining[symbol] -= units;
    weighted -= value * s.lt[symbol];
    debt = debt > out ? debt - out : 0n;
    short = short > out ? short - out : 0n;
  }
  if (short > 0n) throw new ExitRefusal(`the exit needs more than ${EXIT_MAX_ROUNDS} rounds of selling collateral: repay some USDC from the wallet first`);
  return { needed, rounds };
}

/**
 * The planned exit with each swap's minimum out: 1% under the pool's quote for its units after the swaps of
 * the same asset before it (one pool, one after the other). The rounds are
 * replayed on those minimums: the first whose guaranteed USDC (with the wallet's) covers the last repayment
 * is the last (the rest stays supplied and is withdrawn with max); a round before it repays what its swap
 * guarantees, never all of the debt (the last repayment is max, which Aave refuses once the debt is closed);
 * every withdrawal must still leave the health factor at 1.05 at the oracle's prices with the debt the pool's
 * prices leave. Refused when the guaranteed USDC would not cover the debt.
 */
export async function withQuotes(s: ExitSnapshot, sell: boolean, quote: (from: Volatile, units: bigint) => Promise<bigint>): Promise<ExitPlan> {
  const supplied = fromSuppliedUsdc(s);
  const sized = sizeExit(s);
  // the swaps of one asset go through one pool one after the other: each is quoted after the ones before it
  // (what the units so far return, less what the ones before returned), so each bound holds after the others
  const sold: Record<Volatile, { units: bigint; out: bigint }> = { ETH: { units: 0n, out: 0n }, BTC: { units: 0n, out: 0n } };
  const next = async (symbol: Volatile, units: bigint) => {
    const before = sold[symbol];
    const out = await quote(symbol, before.units + units);
    sold[symbol] = { units: before.units + units, out };
    return minOutOf(out - before.out);
  };
  const remaining: Record<Volatile, bigint> = { ETH: s.supplied.ETH, BTC: s.supplied.BTC };
  let weighted = VOLATILE.reduce((sum, a) => sum + valueOf(a, remaining[a], s.price[a]) * s.lt[a], 0n);
  let debt = supplied.left;
  let guaranteed = s.walletUsdc;
  const rounds: ExitRound[] = [];
  for (const r of sized.rounds) {
    if (guaranteed >= sized.needed) break;
    weighted -= valueOf(r.symbol, r.units, s.price[r.symbol]) * s.lt[r.symbol];
    remaining[r.symbol] -= r.units;
    if (weighted < EXIT_HEALTH_BPS * debt) {
      throw new ExitRefusal(
        `the pool's prices are too far under the oracle's for the rounds to keep the health factor at ${Number(EXIT_HEALTH_BPS) / 10_000}: repay some USDC from the wallet first`,
      );
    }
    const minOut = await next(r.symbol, r.units);
    guaranteed += minOut;
    const last = guaranteed >= sized.needed;
    const repay = last ? 0n : minBig(minOut, debt - 1n);
    debt -= repay;
    rounds.push({ symbol: r.symbol, units: r.units.toString(), all: r.all, minOut: minOut.toString(), repay: repay.toString() });
  }
  if (guaranteed < sized.needed) {
    throw new ExitRefusal(
      `at the pool's prices the collateral sold would guarantee ${formatDecimal(guaranteed, 6)} USDC of the ${formatDecimal(sized.needed, 6)} the debt needs: repay some USDC from the wallet first`,
    );
  }
  const withdrawAll: AssetSymbol[] = supplied.usdcLeftSupplied ? ["USDC"] : [];
  for (const a of VOLATILE) if (remaining[a] > 0n) withdrawAll.push(a);
  const sales: ExitPlan["sales"] = [];
  if (sell)
    for (const symbol of VOLATILE)
      if (remaining[symbol] > 0n) sales.push({ symbol, units: remaining[symbol].toString(), minOut: (await next(symbol, remaining[symbol])).toString() });
  return {
    debt: s.debt.toString(),
    repayWithATokens: supplied.call === "max" ? "max" : supplied.call.toString(),
    approval: sized.needed.toString(),
    rounds,
    withdrawAll,
    sales,
  };
}

/** the calls of a planned exit, in order */
export function exitSteps(c: StepContext, plan: ExitPlan): PlannedStep[] {
  const usdc = tokenOf(c, "USDC");
  const router = swapRouter02(c.market.chainId);
  const steps: PlannedStep[] = [];
  let main = true;
  const pool = (step: (isMain: boolean) => PlannedStep) => {
    steps.push(step(main));
    main = false;
  };
  if (plan.repayWithATokens !== "0") pool((m) => repayWithATokens(c, plan.repayWithATokens === "max" ? ALL : BigInt(plan.repayWithATokens), m));
  const sold = (symbol: Volatile, units: bigint, minOut: bigint, note: string) => {
    const token = tokenOf(c, symbol);
    steps.push(approve(c, token, router, ROUTER_NAME, units), swapExactIn(c, token, usdc, units, minOut, note));
  };
  plan.rounds.forEach((r, i) => {
    const last = i === plan.rounds.length - 1;
    const units = BigInt(r.units);
    const minOut = BigInt(r.minOut);
    pool((m) => withdrawCall(c, tokenOf(c, r.symbol), r.all ? ALL : units, m));
    sold(r.symbol, units, minOut, "1% below the pool's quote");
    const repaid = BigInt(r.repay);
    if (!last && repaid > 0n) {
      steps.push(approve(c, usdc, c.market.pool, POOL_NAME, repaid));
      pool((m) => repayCall(c, repaid, m));
    }
  });
  if (BigInt(plan.approval) > 0n) {
    // the last repayment: all of the debt, whatever interest accrued (Aave's type(uint256).max, for the borrower itself)
    steps.push(approve(c, usdc, c.market.pool, POOL_NAME, BigInt(plan.approval)));
    pool((m) => repayCall(c, ALL, m));
  }
  for (const a of plan.withdrawAll) pool((m) => withdrawCall(c, tokenOf(c, a), ALL, m));
  for (const x of plan.sales) sold(x.symbol, BigInt(x.units), BigInt(x.minOut), "1% below the pool's quote");
  return steps;
}

const planOf = (p: ActionParams): ExitPlan | null => (p.exit ? (JSON.parse(p.exit) as ExitPlan) : null);

export const exit: ActionDeclaration<"exit"> = {
  name: "exit",
  direction: "down",
  fee: "none",
  idPrefix: "ext",
  receiptId: "exit_id",
  status: "completed",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/exit",
    operationId: "createExit",
    summary: "Close the position: repay all debt, withdraw everything supplied, optionally sell it (free)",
    toolDescription:
      "Close the position (free: a downward leg): repay all USDC debt (Aave's max repay, no dust), from the supplied USDC, the wallet's USDC, then collateral sold in rounds that never cross Aave's liquidation threshold; withdraw everything supplied; optionally sell the ETH and BTC for USDC. Ends with zero debt and zero aTokens.",
    example: { sell: false },
    price: { atomic: 50_600n, description: "Prepare or execute an exit" },
  },
  body: ExitRequest,
  params: (body) => (body.sell ? { sell: true } : {}),
  async planOnChain(params, snapshot, quote) {
    return { ...params, exit: JSON.stringify(await withQuotes(snapshot, params.sell === true, quote)) };
  },
  // what it repays: the debt planned (the service values it once the chain is read)
  valueMicro: (params) => BigInt(planOf(params)?.debt ?? "0"),
  effect: closed,
  ledger(h, _amount, _fee, params) {
    if (h.debtMicro === 0n && h.btcUnits === 0n && h.ethUnits === 0n) throw new LedgerError("insufficient_balance", "the treasury holds nothing to exit");
    let usdc = h.usdcMicro;
    let debt = h.debtMicro;
    const fromUsdc = minBig(usdc, debt);
    usdc -= fromUsdc;
    debt -= fromUsdc;
    let btc = h.btcUnits;
    let eth = h.ethUnits;
    // the rest of the debt from the collateral, filled at the sandbox's price (a sale's fill on a ledger), ETH first
    for (const symbol of VOLATILE) {
      if (debt === 0n) break;
      const price = ASSETS[symbol].sandboxPriceMicro;
      const units = symbol === "ETH" ? eth : btc;
      const needed = minBig(units, ceilDiv(debt * 10n ** BigInt(ASSETS[symbol].decimals), price));
      const proceeds = valueOf(symbol, needed, price);
      const paid = minBig(debt, proceeds);
      debt -= paid;
      usdc += proceeds - paid;
      if (symbol === "ETH") eth -= needed;
      else btc -= needed;
    }
    if (debt > 0n) throw new LedgerError("insufficient_balance", `the collateral does not cover the debt: ${formatDecimal(debt, 6)} USDC short`);
    if (params.sell) {
      usdc += valueOf("ETH", eth, ASSETS.ETH.sandboxPriceMicro) + valueOf("BTC", btc, ASSETS.BTC.sandboxPriceMicro);
    }
    // withdrawn (or sold): nothing stays in the treasury's books but the idle USDC
    return { holdings: { btcUnits: 0n, ethUnits: 0n, usdcMicro: usdc, debtMicro: 0n }, bought: {}, repaidMicro: h.debtMicro };
  },
  walletNeeds: (_amount, position) =>
    position.debtMicro === 0n && position.holdings.aUsdc === 0n && position.holdings.aWeth === 0n && position.holdings.aBtc === 0n
      ? { usdcMicro: 0n, refusal: { code: "insufficient_collateral", message: "the wallet has no position on Aave to exit" } }
      : { usdcMicro: 0n },
  sandboxUsdcMicro: () => 0n,
  plan(c, { params }) {
    const plan = planOf(params);
    if (!plan) throw new Error("an exit is planned on the chain's figures first (params.exit)");
    return exitSteps(c, plan);
  },
  title: (params) => `exit: repay all USDC debt, withdraw everything supplied${params.sell ? ", sell the ETH and BTC for USDC" : ""}`,
  receipt: ({ id, params, ledger }) => {
    const plan = planOf(params);
    return {
      exit_id: id,
      repaid_usdc: usdcToNumber(ledger ? ledger.repaidMicro : BigInt(plan?.debt ?? "0")),
      sold: params.sell === true,
      ...(plan ? { rounds_from_collateral: plan.rounds.length, withdrawn: plan.withdrawAll } : {}),
    };
  },
  onExecuted: (after: { debtMicro: Micro }) => ({ remaining_borrow: usdcToNumber(after.debtMicro) }),
  signer: {
    functions: ["approve", "repay", "repayWithATokens", "withdraw", "exactInputSingle"],
    //   it must close the debt: with debt, a closing repayment (the last repay, type(uint256).max; without one, repayWithATokens max);
    //   before it, each withdrawal is sold at once (the next swap: the same token, the same units) and every swap follows one;
    //   after it, withdrawals of everything (max) only, and swaps only when a sale was asked; repays of USDC for this wallet,
    //   swaps for USDC to this wallet, each bounded at least at the signer's own quote less its maximum slippage; approvals to
    //   the Pool and the router; no fee, no supply, no borrow
    check(calls, intent, x) {
      const roles = new Set(calls.map((c) => c.role));
      for (const r of roles) if (!["approve", "repay", "withdraw", "swap"].includes(r)) x.refuse(`an exit has no ${r}`);
      const repays = calls.filter((c) => c.role === "repay");
      for (const r of repays) if (r.token !== x.usdc) x.refuse("an exit repays USDC only");
      const plain = calls.map((c, i) => [c, i] as const).filter(([c]) => c.role === "repay" && c.functionName === "repay");
      const lastPlain = plain.at(-1);
      if (lastPlain && lastPlain[0].amount !== ALL) x.refuse("the last repayment of an exit must be all of the debt (type(uint256).max)");
      const position = intent.position;
      const hasDebt = position === undefined || position.debt > 0n;
      const closing = lastPlain ? lastPlain[1] : calls.findIndex((c) => c.functionName === "repayWithATokens" && c.amount === ALL);
      if (closing < 0 && hasDebt) x.refuse("the exit does not repay all of the debt (no type(uint256).max repayment)");
      // repayWithATokens max closes the debt only when the supplied USDC covers it, with room for the interest until it runs
      if (!lastPlain && closing >= 0 && hasDebt && !(position && (position.supplied[x.usdc] ?? 0n) >= position.debt + bufferOf(position.debt))) {
        x.refuse("the supplied USDC does not cover the debt: the exit's last repayment must be all of the debt from the wallet (repay type(uint256).max)");
      }
      const end = closing < 0 ? -1 : closing;
      calls.forEach((c, i) => {
        if (i < end && c.role === "withdraw") {
          const next = calls.slice(i + 1).find((n) => n.role === "swap" || n.role === "withdraw");
          if (!next || next.role !== "swap" || next.token !== c.token)
            x.refuse("a withdrawal before the exit's last repayment must be sold at once for the same units");
          // all of a supply (max): the swap sells about all of it (the supply read here, less the interest that may accrue in between)
          const all = position?.supplied[c.token];
          const sameUnits = c.amount === ALL ? all !== undefined && next!.amount >= all - all / 1_000n : next!.amount === c.amount;
          if (!sameUnits) x.refuse("a withdrawal before the exit's last repayment must be sold at once for the same units");
        }
        if (i < end && c.role === "swap") {
          const before = calls
            .slice(0, i)
            .reverse()
            .find((n) => n.role === "swap" || n.role === "withdraw");
          if (!before || before.role !== "withdraw") x.refuse("a swap before the exit's last repayment must sell a withdrawal");
        }
        if (i > end && c.role === "withdraw" && c.amount !== ALL)
          x.refuse("after the exit's last repayment, only withdrawals of everything (type(uint256).max)");
        if (i > end && c.role === "swap" && intent.sell !== true) x.refuse("the exit sells collateral after its last repayment, and no sale was asked");
        if (i > end && c.role === "repay") x.refuse("a repayment after the exit's last one");
      });
      for (const s of calls.filter((c) => c.role === "swap")) {
        if (s.counterparty !== x.usdc) x.refuse("an exit's swaps sell for USDC only");
        x.floor(s);
      }
      for (const a of calls.filter((c) => c.role === "approve"))
        if (a.counterparty !== x.pool && a.counterparty !== x.router) x.refuse("an exit approves the Pool and the router only");
      for (const a of calls.filter((c) => c.role === "approve" && c.counterparty === x.pool))
        if (a.token !== x.usdc) x.refuse("an exit approves only USDC to the Pool (its repayments)");
      return calls.length;
    },
  },
  cli: { usage: "exit [--sell]", body: (_amount, flags) => (flags.sell ? { sell: true } : {}) },
};
