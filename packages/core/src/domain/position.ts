/**
 * A lending position and what an action does to it: LTV, health score, LTV
 * zones, liquidation distance and the safety rail. Pure functions over exact
 * integers; definitions follow Aave V3 (see docs/DOMAIN.md):
 *
 *   LTV           = debt / collateral value                (percent)
 *   health score  = collateral x liquidation threshold / debt (Aave's health factor)
 *   price drop to liquidation = 1 - LTV / liquidation threshold
 */
import { feeFor, type Fee, type FeeKind } from "./fees";
import { BPS, ceilDiv, formatDecimal, maxBig, minBig, ratioToPct, type Micro } from "./money";
import { ceilingBps, type Preset } from "./presets";

export interface Position {
  /** value of the collateral, micro-USDC */
  collateralMicro: Micro;
  /** outstanding debt, micro-USDC */
  debtMicro: Micro;
  /** weighted liquidation threshold of the collateral, basis points */
  liquidationThresholdBps: number;
}

/** Aave reports an infinite health factor with no debt; JSON has no infinity. */
export const HEALTH_SCORE_CAP = 100;
/** LTV reported when debt remains and no collateral does. */
export const LTV_PCT_CAP = 999.99;

export function ltvPct(p: Pick<Position, "collateralMicro" | "debtMicro">): number {
  if (p.debtMicro <= 0n) return 0;
  if (p.collateralMicro <= 0n) return LTV_PCT_CAP;
  return Math.min(LTV_PCT_CAP, ratioToPct(p.debtMicro, p.collateralMicro, 2));
}

/** Aave health factor, rounded down to 2 decimals, capped at HEALTH_SCORE_CAP. */
export function healthScore(p: Position): number {
  if (p.debtMicro <= 0n) return HEALTH_SCORE_CAP;
  const scaled = (p.collateralMicro * BigInt(p.liquidationThresholdBps) * 100n) / (BPS * p.debtMicro);
  const value = Number(formatDecimal(scaled, 2));
  return Math.min(HEALTH_SCORE_CAP, value);
}

/** LTV (percent) at which the health score reaches 1, i.e. the liquidation threshold. */
export function liquidationLtvPct(liquidationThresholdBps: number): number {
  return liquidationThresholdBps / 100;
}

/**
 * Price drop of the collateral, in percent, that brings a position at `ltv`
 * to liquidation (health score 1): 1 - ltv / liquidation threshold.
 */
export function priceDropToLiquidationPct(ltv: number, liquidationThresholdBps: number): number {
  const threshold = liquidationLtvPct(liquidationThresholdBps);
  if (ltv >= threshold) return 0;
  return Math.round((1 - ltv / threshold) * 10_000) / 100;
}

export type LtvZone = "safe" | "active" | "ceiling" | "over_ceiling";

export function ltvZonesOf(preset: Preset) {
  return {
    safe: { min: 0, max: preset.liveBand.min },
    active: { min: preset.liveBand.min, max: preset.liveBand.max },
    ceiling: { min: preset.liveBand.max, max: preset.ceiling },
    hard_ceiling: preset.ceiling,
  };
}

export function zoneOf(ltv: number, preset: Preset): LtvZone {
  if (ltv < preset.liveBand.min) return "safe";
  if (ltv < preset.liveBand.max) return "active";
  if (ltv <= preset.ceiling) return "ceiling";
  return "over_ceiling";
}

export class PositionError extends Error {
  constructor(
    readonly code: "insufficient_collateral" | "insufficient_debt",
    message: string,
  ) {
    super(message);
  }
}

/**
 * What an action does to a position, as its declaration states it
 * (actions/*.ts): its fee kind, the position after it (the USD model of the
 * preview and the safety rail), and the most the rail accepts of it.
 */
export interface PositionRule {
  name: string;
  fee: FeeKind;
  effect(p: Position, amount: Micro, fee: Fee): Position;
  /** the largest amount the rail accepts (only for actions that can raise LTV) */
  safeAmount?(p: Position, ceilingBps: bigint): Micro;
}

/** funds in: the net amount (after the fee) becomes collateral */
export const addCollateral = (p: Position, amount: Micro, fee: Fee): Position => ({ ...p, collateralMicro: p.collateralMicro + amount - fee.feeMicro });

/** debt in */
export const addDebt = (p: Position, amount: Micro): Position => ({ ...p, debtMicro: p.debtMicro + amount });

/** debt out, paid from outside the position (at most the debt, as Aave repays at most the debt) */
export const repayDebt = (p: Position, amount: Micro): Position => ({ ...p, debtMicro: p.debtMicro - minBig(amount, p.debtMicro) });

/** collateral out (withdrawn or sold) */
export function removeCollateral(p: Position, amount: Micro): Position {
  if (amount > p.collateralMicro)
    throw new PositionError("insufficient_collateral", `amount exceeds the collateral of ${formatDecimal(p.collateralMicro, 6)} USDC`);
  return { ...p, collateralMicro: p.collateralMicro - amount };
}

/** debt paid from the collateral (protection, deleverage) */
export function repayFromCollateral(p: Position, amount: Micro): Position {
  const repaid = minBig(amount, p.debtMicro);
  if (repaid > p.collateralMicro) throw new PositionError("insufficient_collateral", "collateral does not cover the repayment");
  return { ...p, collateralMicro: p.collateralMicro - repaid, debtMicro: p.debtMicro - repaid };
}

/** everything closed */
export const closed = (p: Position): Position => ({ ...p, collateralMicro: 0n, debtMicro: 0n });

/** the most debt the ceiling allows on top of `p` */
export const borrowSafeAmount = (p: Position, ceiling: bigint): Micro => maxBig(0n, (ceiling * p.collateralMicro) / BPS - p.debtMicro);

/** the most collateral that can leave `p` with LTV at or under the ceiling (all of it without debt) */
export function withdrawSafeAmount(p: Position, ceiling: bigint): Micro {
  if (p.debtMicro === 0n) return p.collateralMicro;
  return minBig(p.collateralMicro, maxBig(0n, p.collateralMicro - ceilDiv(p.debtMicro * BPS, ceiling)));
}

/** Exact comparison: does `after` carry a higher LTV than `before`? */
export function ltvIncreased(before: Position, after: Position): boolean {
  if (after.debtMicro === 0n) return false;
  if (after.collateralMicro === 0n) return before.collateralMicro > 0n || before.debtMicro < after.debtMicro;
  if (before.collateralMicro === 0n) return false;
  return after.debtMicro * before.collateralMicro > before.debtMicro * after.collateralMicro;
}

/** Exact comparison: is the position's LTV above the ceiling? */
export function aboveCeiling(p: Position, ceiling: bigint): boolean {
  if (p.debtMicro === 0n) return false;
  if (p.collateralMicro === 0n) return true;
  return p.debtMicro * BPS > ceiling * p.collateralMicro;
}

/**
 * The safety rail: an action is refused when it raises LTV and ends above
 * the ceiling. An action that does not raise LTV is never refused, so retrying
 * with `safe_amount` always passes, even on a position already above it.
 */
export function breachesCeiling(before: Position, after: Position, ceiling: bigint): boolean {
  return aboveCeiling(after, ceiling) && ltvIncreased(before, after);
}

/**
 * Largest amount of an action that the rail accepts on `p`. For actions that
 * cannot raise LTV it is `requested` itself.
 */
export function safeAmount(p: Position, rule: PositionRule, ceiling: bigint, requested: Micro): Micro {
  return rule.safeAmount ? rule.safeAmount(p, ceiling) : requested;
}

export interface Simulation {
  action: string;
  amountMicro: Micro;
  fee: Fee;
  before: Position;
  after: Position;
  ltvBefore: number;
  ltvAfter: number;
  healthAfter: number;
  /** set when the safety rail refuses the action */
  breach: { safeAmountMicro: Micro } | null;
}

/** Run an action against a position under a preset's ceiling. */
export function simulate(p: Position, rule: PositionRule, amount: Micro, preset: Preset, tierIndex = 0): Simulation {
  const fee = feeFor(rule.fee, amount, tierIndex);
  const after = rule.effect(p, amount, fee);
  const ceiling = ceilingBps(preset);
  const breach = breachesCeiling(p, after, ceiling) ? { safeAmountMicro: safeAmount(p, rule, ceiling, amount) } : null;
  return {
    action: rule.name,
    amountMicro: amount,
    fee,
    before: p,
    after,
    ltvBefore: ltvPct(p),
    ltvAfter: ltvPct(after),
    healthAfter: healthScore(after),
    breach,
  };
}

/** A position of `collateral` value at a given LTV percent (preview input). */
export function positionAtLtv(collateralMicro: Micro, ltv: number, liquidationThresholdBps: number): Position {
  const ltvBps = BigInt(Math.round(ltv * 100));
  return { collateralMicro, debtMicro: (collateralMicro * ltvBps) / BPS, liquidationThresholdBps };
}
