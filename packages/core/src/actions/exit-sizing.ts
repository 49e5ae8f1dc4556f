/**
 * The exit's sizing, pure, on the chain's figures when it is planned (`ExitSnapshot`: exact debt and aToken
 * units, the wallet's USDC, oracle prices, liquidation thresholds), in the order exit.ts gives: what the
 * supplied USDC repays (`fromSuppliedUsdc`), then the wallet's USDC, then the rounds of collateral (`sizeExit`),
 * the lowest liquidation threshold first. A round withdraws at most what leaves the health factor at
 * EXIT_HEALTH (1.05) at the oracle's prices, (weighted collateral - 1.05 x debt) / its liquidation threshold,
 * and is sized to return the USDC still short after EXIT_SIZING_HAIRCUT_BPS.
 */
import { ASSETS, type AssetSymbol } from "../domain/assets";
import { formatDecimal, minBig } from "../domain/money";
import { PlanRefusal, type MarketSnapshot } from "./declaration";

/** the health factor each withdrawal of collateral stops at, in basis points (1.05) */
export const EXIT_HEALTH_BPS = 10_500n;
/** how much under the oracle's value a round's swap is sized to return (the 1% bound, the pool's fee and its price impact) */
export const EXIT_SIZING_HAIRCUT_BPS = 300n;
/** the repayment's approval covers the debt planned plus this (interest until the envelope is signed), plus 1 unit */
export const EXIT_DEBT_BUFFER_BPS = 10n;
/** at most this many rounds of selling collateral */
export const EXIT_MAX_ROUNDS = 8;

/** the collateral sold in rounds: ETH and BTC (the supplied USDC repays the debt, it is never sold) */
export type Volatile = "ETH" | "BTC";
/** the assets an exit may sell, in the order a sale and the sandbox ledger take them */
export const VOLATILE = ["ETH", "BTC"] as const;

/** what the chain says of the wallet when the exit is planned: exact units, oracle prices (micro-USDC per whole unit), liquidation thresholds (bps) */
export type ExitSnapshot = MarketSnapshot;

/** the value of `units` of an asset at `price` (micro-USDC per whole unit), rounded down */
export const valueOf = (s: AssetSymbol, units: bigint, price: bigint) => (units * price) / 10n ** BigInt(ASSETS[s].decimals);
/** the units of an asset `micro` buys at `price`, rounded down */
const unitsFor = (s: AssetSymbol, micro: bigint, price: bigint) => (micro * 10n ** BigInt(ASSETS[s].decimals)) / price;
/** a / b rounded up */
export const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

export class ExitRefusal extends PlanRefusal {}

/** interest that may accrue on the debt between the plan and the signature, plus a unit */
export const bufferOf = (debt: bigint) => (debt * EXIT_DEBT_BUFFER_BPS) / 10_000n + 1n;

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
