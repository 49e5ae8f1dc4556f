/**
 * Aave V3.6's arithmetic (aave-v3-origin 3.6.0), to the wei: WadRayMath and PercentageMath with their rounding
 * variants, TokenMath (3.5+: balances and scaled amounts round in the protocol's favour), MathUtils' interest and
 * GenericLogic.calculateUserAccountData. Pure functions over bigints, each named after the Solidity it follows.
 *
 *   aToken balance   = rayMulFloor(scaled, liquidityIndex)          supply mints rayDivFloor, withdraw burns rayDivCeil
 *   debt balance     = rayMulCeil(scaled, variableBorrowIndex)      borrow mints rayDivCeil, repay burns rayDivFloor
 *   collateral (base) = floor(aToken balance x price / 10^decimals)
 *   debt (base)       = ceil(debt balance x price / 10^decimals)      (MathUtils.mulDivCeil)
 *   HF = wadDiv(Σ collateral_i x LT_i, debt) / 10^4                   (no rounded average threshold in between)
 *   avg LTV, avg LT   = Σ collateral_i x bps_i / collateral, floored
 */
export const RAY = 10n ** 27n;
export const WAD = 10n ** 18n;
export const PERCENTAGE_FACTOR = 10_000n;
export const MAX_UINT256 = 2n ** 256n - 1n;
export const SECONDS_PER_YEAR = 365n * 24n * 3600n;

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** half up */
export const rayMul = (a: bigint, b: bigint): bigint => (a * b + RAY / 2n) / RAY;
export const rayMulFloor = (a: bigint, b: bigint): bigint => (a * b) / RAY;
export const rayMulCeil = (a: bigint, b: bigint): bigint => ceilDiv(a * b, RAY);
export const rayDivFloor = (a: bigint, b: bigint): bigint => (a * RAY) / b;
export const rayDivCeil = (a: bigint, b: bigint): bigint => ceilDiv(a * RAY, b);
/** half up */
export const wadDiv = (a: bigint, b: bigint): bigint => (a * WAD + b / 2n) / b;
/** MathUtils.mulDivCeil */
export const mulDivCeil = (a: bigint, b: bigint, c: bigint): bigint => ceilDiv(a * b, c);
export const percentMulFloor = (value: bigint, bps: bigint): bigint => (value * bps) / PERCENTAGE_FACTOR;
export const percentDivCeil = (value: bigint, bps: bigint): bigint => ceilDiv(value * PERCENTAGE_FACTOR, bps);

/** TokenMath (3.5+): what a scaled balance is worth, and what an amount moves in scaled units */
export const aTokenBalance = rayMulFloor;
export const aTokenMintScaled = rayDivFloor;
export const aTokenBurnScaled = rayDivCeil;
export const vTokenBalance = rayMulCeil;
export const vTokenMintScaled = rayDivCeil;
export const vTokenBurnScaled = rayDivFloor;

/** MathUtils.calculateLinearInterest: the liquidity index's growth factor over `seconds` at `rateRay` a year */
export const linearInterest = (rateRay: bigint, seconds: bigint): bigint => RAY + (rateRay * seconds) / SECONDS_PER_YEAR;

/** MathUtils.calculateCompoundedInterest (3.6: the third-order expansion on x = rate x time / year) */
export function compoundedInterest(rateRay: bigint, seconds: bigint): bigint {
  // no time: x = 0 and the factor is 1 (Aave returns RAY early, the same figure)
  const x = (rateRay * seconds) / SECONDS_PER_YEAR;
  return RAY + x + rayMul(x, x / 2n + rayMul(x, x / 6n));
}

/** a reserve's indexes as stored (getReserveData) and its rates, read at its last update */
export interface ReserveIndexes {
  liquidityIndex: bigint;
  variableBorrowIndex: bigint;
  currentLiquidityRate: bigint;
  currentVariableBorrowRate: bigint;
  lastUpdateTimestamp: bigint;
}

/** ReserveLogic.getNormalizedIncome at `timestamp` (in the block of the update the factor is 1: the stored index) */
export const normalizedIncome = (r: ReserveIndexes, timestamp: bigint): bigint =>
  rayMul(linearInterest(r.currentLiquidityRate, timestamp - r.lastUpdateTimestamp), r.liquidityIndex);

/** ReserveLogic.getNormalizedDebt at `timestamp` (in the block of the update the factor is 1: the stored index) */
export const normalizedDebt = (r: ReserveIndexes, timestamp: bigint): bigint =>
  rayMul(compoundedInterest(r.currentVariableBorrowRate, timestamp - r.lastUpdateTimestamp), r.variableBorrowIndex);

/** one reserve of a user's account: a supply enabled as collateral, a variable debt, or both */
export interface AccountReserve {
  /** scaled aToken balance enabled as collateral (0n when none or not enabled) */
  scaledCollateral: bigint;
  /** scaled variable debt */
  scaledDebt: bigint;
  /** getReserveNormalizedIncome, ray */
  liquidityIndex: bigint;
  /** getReserveNormalizedVariableDebt, ray */
  debtIndex: bigint;
  /** oracle price, base currency */
  price: bigint;
  decimals: number;
  ltvBps: bigint;
  liquidationThresholdBps: bigint;
}

export interface AccountData {
  totalCollateralBase: bigint;
  totalDebtBase: bigint;
  /** weighted average LTV, bps, floored */
  ltvBps: bigint;
  /** weighted average liquidation threshold, bps, floored */
  liquidationThresholdBps: bigint;
  /** wad, MAX_UINT256 without debt */
  healthFactorWad: bigint;
  /** a collateral with LTV 0 is enabled (it must leave first) */
  hasZeroLtvCollateral: boolean;
}

/** one collateral's value in base currency (GenericLogic._getUserBalanceInBaseCurrency) */
export const collateralBase = (scaled: bigint, liquidityIndex: bigint, price: bigint, decimals: number): bigint =>
  (aTokenBalance(scaled, liquidityIndex) * price) / 10n ** BigInt(decimals);

/** one debt's value in base currency (GenericLogic._getUserDebtInBaseCurrency) */
export const debtBase = (scaled: bigint, debtIndex: bigint, price: bigint, decimals: number): bigint =>
  mulDivCeil(vTokenBalance(scaled, debtIndex), price, 10n ** BigInt(decimals));

/** GenericLogic.calculateUserAccountData (no e-mode) over the user's reserves */
export function accountData(reserves: readonly AccountReserve[]): AccountData {
  let [collateral, debt, ltvSum, ltSum, zeroLtv] = [0n, 0n, 0n, 0n, false];
  for (const r of reserves) {
    if (r.scaledCollateral > 0n) {
      const value = collateralBase(r.scaledCollateral, r.liquidityIndex, r.price, r.decimals);
      collateral += value;
      if (r.ltvBps === 0n) zeroLtv = true;
      else ltvSum += value * r.ltvBps;
      ltSum += value * r.liquidationThresholdBps;
    }
    debt += debtBase(r.scaledDebt, r.debtIndex, r.price, r.decimals);
  }
  return {
    totalCollateralBase: collateral,
    totalDebtBase: debt,
    ltvBps: collateral === 0n ? 0n : ltvSum / collateral,
    liquidationThresholdBps: collateral === 0n ? 0n : ltSum / collateral,
    healthFactorWad: debt === 0n ? MAX_UINT256 : wadDiv(ltSum, debt) / PERCENTAGE_FACTOR,
    hasZeroLtvCollateral: zeroLtv,
  };
}

/** ValidationLogic.validateHFAndLtv (a borrow's check on the account after it): HF >= 1 and collateral covers debt at the LTV */
export const borrowAllowed = (a: AccountData): boolean =>
  a.ltvBps !== 0n && a.healthFactorWad >= WAD && a.totalCollateralBase >= percentDivCeil(a.totalDebtBase, a.ltvBps);

/** ValidationLogic.validateHealthFactor (a withdraw's check on the account after it, with debt) */
export const withdrawAllowed = (a: AccountData): boolean => a.healthFactorWad >= WAD;
