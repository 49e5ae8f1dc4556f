/**
 * The delegation lifecycle of a managed treasury (spec 3.3 names the states,
 * not the transitions; these are the service's). The state is derived, never
 * stored: from the chain (is the module enabled on the Safe, does the Safe
 * hold a position, does the automation key have transactions in flight) and
 * from whether the operator ever approved (observed enabled).
 *
 *   not_granted                 module never enabled
 *   approved_pending_funds      enabled, the Safe has no Aave collateral yet
 *   active                      enabled and funded: protection may act
 *   revoked_pending_settlement  disabled after approval, automation transactions still in flight
 *   revoked                     disabled after approval, nothing in flight
 *
 * not_granted -> approved_pending_funds (operator enables the module, no funds)
 * not_granted | approved_pending_funds -> active (enabled and collateral present)
 * active -> approved_pending_funds (collateral withdrawn)
 * active | approved_pending_funds -> revoked_pending_settlement | revoked (operator disables the module)
 * revoked_pending_settlement -> revoked (in-flight transactions settle or drop)
 * revoked -> approved_pending_funds | active (operator enables it again)
 */
import type { DelegationState } from "./policy";

export interface DelegationFacts {
  moduleEnabled: boolean;
  everApproved: boolean;
  hasFunds: boolean;
  automationInFlight: boolean;
}

export function delegationState(f: DelegationFacts): DelegationState {
  if (f.moduleEnabled) return f.hasFunds ? "active" : "approved_pending_funds";
  if (!f.everApproved) return "not_granted";
  return f.automationInFlight ? "revoked_pending_settlement" : "revoked";
}

/** Aave base currency: USD with 8 decimals */
export const BASE_PER_USD = 100_000_000n;
/**
 * Kept above the park line, in base units ($0.0001): covers Aave's own
 * rounding of token amounts (wei-level rayMul/rayDiv) between the engine's
 * read and the module's check, so the module never sees the line crossed.
 */
export const PARK_MARGIN_BASE = 10_000n;

export interface RepaymentInput {
  /** getUserAccountData's totalCollateralBase and totalDebtBase (8 decimals USD) */
  collateralBase: bigint;
  debtBase: bigint;
  /** the oracle's price of 1 USDC in base units (1e8 = $1) */
  usdcPriceBase: bigint;
  parkTargetBps: bigint;
  /** repay with aUSDC (repayWithATokens): collateral falls with the debt */
  fromCollateral: boolean;
}

/**
 * The repayment (micro-USDC) that brings a position down to the park target,
 * rounded toward the safe side of the ProtectionModule's check. The module
 * computes LTV as floor(debt x 10,000 / collateral) and refuses a result below
 * the park target, so the repayment must leave
 *   debt' x 10,000 >= park x collateral'   (exactly, in base units).
 * Repaying X micro-USDC lowers the debt by x = X x price / 1e6 base units:
 *   from the wallet:   debt' = D - x, collateral' = C
 *                      x <= D - ceil(park x C / 10,000)
 *   with aUSDC:        debt' = D - x, collateral' = C - x
 *                      x <= (D x 10,000 - park x C) / (10,000 - park)
 * Every division rounds toward a smaller repayment, and PARK_MARGIN_BASE is
 * kept above the line. 0 when the module's LTV is already at or under the
 * target (then no repayment could lower it without crossing the target).
 */
export function repaymentToPark(p: RepaymentInput): bigint {
  const { collateralBase: C, debtBase: D, usdcPriceBase: P, parkTargetBps: park } = p;
  if (P <= 0n || park <= 0n || park >= 10_000n) throw new RangeError("price must be positive and the park target between 0 and 10,000 bps");
  // the module's own LTV must be above the target, or no repayment can lower it without crossing (LtvDidNotDecrease)
  if (C <= 0n || (D * 10_000n) / C <= park) return 0n;
  let x: bigint;
  if (p.fromCollateral) {
    const excess = D * 10_000n - park * C - PARK_MARGIN_BASE * (10_000n - park);
    x = excess > 0n ? excess / (10_000n - park) : 0n;
  } else {
    const line = (park * C + 9_999n) / 10_000n + PARK_MARGIN_BASE;
    x = D > line ? D - line : 0n;
  }
  // base units -> micro-USDC, rounded down
  return (x * 1_000_000n) / P;
}
