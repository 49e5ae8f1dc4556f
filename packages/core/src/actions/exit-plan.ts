/**
 * The exit as planned, kept in the envelope's params (`exit`, JSON) so the calls are the ones planned: the sizing
 * (exit-sizing.ts) with each swap's minimum out set from the pool's quote, and the rounds replayed on those
 * minimums.
 */
import type { AssetSymbol } from "../domain/assets";
import { formatDecimal, minBig } from "../domain/money";
import { minOutOf } from "./steps";
import { EXIT_HEALTH_BPS, ExitRefusal, fromSuppliedUsdc, sizeExit, valueOf, VOLATILE, type ExitSnapshot, type Volatile } from "./exit-sizing";

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
