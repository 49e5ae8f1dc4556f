/**
 * Aave 3.6's liquidation rules (LiquidationLogic.executeLiquidationCall and _calculateAvailableCollateralToLiquidate)
 * as a pure function: the largest debt a liquidationCall on one collateral and one debt reserve repays, to the wei,
 * from what the Pool reads at the block the call runs in.
 *
 * - close factor: all the reserve's debt, but half the position's total debt (DEFAULT_LIQUIDATION_CLOSE_FACTOR)
 *   when the reserve's collateral and debt are both at least MIN_BASE_MAX_CLOSE_FACTOR_THRESHOLD (2,000 USD) and
 *   the health factor is above CLOSE_FACTOR_HF_THRESHOLD (0.95);
 * - the collateral the bonus buys: when the debt's worth plus the bonus exceeds the collateral, all the collateral
 *   and the debt it pays for;
 * - dust: a call that closes out neither the debt nor the collateral must leave at least MIN_LEFTOVER_BASE
 *   (1,000 USD) of each, else MustNotLeaveDust; the largest amount that does is then the answer.
 */
export const MIN_BASE_MAX_CLOSE_FACTOR_THRESHOLD = 2000n * 10n ** 8n;
export const MIN_LEFTOVER_BASE = MIN_BASE_MAX_CLOSE_FACTOR_THRESHOLD / 2n;
export const CLOSE_FACTOR_HF_THRESHOLD = 95n * 10n ** 16n;
export const DEFAULT_LIQUIDATION_CLOSE_FACTOR_BPS = 5000n;

/** what the Pool reads in a liquidationCall (prices in base currency, 8 decimals; units are 10^decimals) */
export interface LiquidationInputs {
  /** the position's total collateral and debt in base currency, and its health factor (WAD) */
  totalDebtBase: bigint;
  healthFactor: bigint;
  /** the borrower's debt in the debt reserve and its aTokens in the collateral reserve (token units) */
  reserveDebt: bigint;
  collateralBalance: bigint;
  debtPrice: bigint;
  debtUnit: bigint;
  collateralPrice: bigint;
  collateralUnit: bigint;
  /** the collateral's liquidation bonus (10500 = 5%) and protocol fee on the bonus (1000 = 10%), in bps */
  bonusBps: bigint;
  protocolFeeBps: bigint;
}

const percentMul = (v: bigint, bps: bigint) => (v * bps + 5000n) / 10_000n;
const percentDiv = (v: bigint, bps: bigint) => (v * 10_000n + bps / 2n) / bps;
const percentDivCeil = (v: bigint, bps: bigint) => (v * 10_000n + bps - 1n) / bps;
const mulDivCeil = (a: bigint, b: bigint, c: bigint) => (a * b + c - 1n) / c;

/** the debt Aave's close factor lets one call repay */
export function maxLiquidatableDebt(p: LiquidationInputs): bigint {
  const debtBase = mulDivCeil(p.reserveDebt, p.debtPrice, p.debtUnit);
  const collateralBase = (p.collateralBalance * p.collateralPrice) / p.collateralUnit;
  if (collateralBase < MIN_BASE_MAX_CLOSE_FACTOR_THRESHOLD || debtBase < MIN_BASE_MAX_CLOSE_FACTOR_THRESHOLD) return p.reserveDebt;
  if (p.healthFactor <= CLOSE_FACTOR_HF_THRESHOLD) return p.reserveDebt;
  const half = percentMul(p.totalDebtBase, DEFAULT_LIQUIDATION_CLOSE_FACTOR_BPS);
  return debtBase > half ? (half * p.debtUnit) / p.debtPrice : p.reserveDebt;
}

/** what a call asking `debtToCover` takes: the debt repaid, the collateral to the liquidator and the protocol's fee */
export function liquidationOf(p: LiquidationInputs, debtToCover: bigint) {
  const capped = debtToCover > maxLiquidatableDebt(p) ? maxLiquidatableDebt(p) : debtToCover;
  const baseCollateral = (p.debtPrice * capped * p.collateralUnit) / (p.collateralPrice * p.debtUnit);
  let collateral = percentMul(baseCollateral, p.bonusBps);
  let debt = capped;
  if (collateral > p.collateralBalance) {
    collateral = p.collateralBalance;
    debt = percentDivCeil((p.collateralPrice * collateral * p.debtUnit) / (p.debtPrice * p.collateralUnit), p.bonusBps);
  }
  const fee = p.protocolFeeBps === 0n ? 0n : percentMul(collateral - percentDiv(collateral, p.bonusBps), p.protocolFeeBps);
  return { debt, collateral: collateral - fee, fee };
}

/** whether Aave accepts the call (no MustNotLeaveDust) */
export function leavesNoDust(p: LiquidationInputs, debtToCover: bigint): boolean {
  const { debt, collateral, fee } = liquidationOf(p, debtToCover);
  if (debt >= p.reserveDebt || collateral + fee >= p.collateralBalance) return true;
  const debtLeft = mulDivCeil(p.reserveDebt - debt, p.debtPrice, p.debtUnit);
  const collateralLeft = ((p.collateralBalance - collateral - fee) * p.collateralPrice) / p.collateralUnit;
  return debtLeft >= MIN_LEFTOVER_BASE && collateralLeft >= MIN_LEFTOVER_BASE;
}

/**
 * The largest debt to cover Aave accepts, and what it repays; 0 when no amount is accepted. Under the close factor
 * the accepted amounts are a prefix of [1, cap] (what a call leaves falls as it covers more), hence the bisection.
 */
export function largestDebtToCover(p: LiquidationInputs): bigint {
  const cap = maxLiquidatableDebt(p);
  if (cap === 0n || p.healthFactor >= 10n ** 18n) return 0n;
  if (leavesNoDust(p, cap)) return liquidationOf(p, cap).debt;
  let [lo, hi] = [0n, cap];
  while (lo < hi) {
    const mid = (lo + hi + 1n) / 2n;
    if (leavesNoDust(p, mid)) lo = mid;
    else hi = mid - 1n;
  }
  return lo;
}
