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

/**
 * The repayment (micro-USDC) that brings a position to the park target.
 * Paying from wallet USDC lowers debt only: X = D - p*C. Paying with aUSDC
 * (repayWithATokens) lowers collateral too: X = (D - p*C) / (1 - p). Rounded
 * down, so the position ends at or just above the target, never below it.
 */
export function repaymentToPark(p: { collateralMicro: bigint; debtMicro: bigint }, parkTargetBps: bigint, fromCollateral: boolean): bigint {
  const excess = p.debtMicro * 10_000n - parkTargetBps * p.collateralMicro; // scaled by 10,000
  if (excess <= 0n) return 0n;
  return fromCollateral ? excess / (10_000n - parkTargetBps) : excess / 10_000n;
}
