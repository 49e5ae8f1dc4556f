/**
 * The policy state document (spec 2.12) for a preset and its context. Pure:
 * timestamps come in, nothing is read from a clock here.
 */
import { FEE_INVARIANTS } from "./fee-schedule";
import { CHECK_FREQUENCY, DELEGATION_MECHANISM, ON_CHAIN_BOUNDS, REPAYMENT_ORDER } from "./protection-terms";
import { DELEVERAGE_MAX_SLIPPAGE_BPS } from "../contracts/protection-module";
import type { Preset } from "./presets";

export const DELEGATION_STATES = ["not_granted", "approved_pending_funds", "active", "revoked_pending_settlement", "revoked"] as const;
export type DelegationState = (typeof DELEGATION_STATES)[number];

export const DORMANCY_WINDOW_MONTHS = 6;
export const PLAN_VERSION = "v3";
export const GAS_CAPS = { per_action_usd: 0.25, per_month_usd: 5, applies_to: "protection actions only" };

export function addMonthsUtc(date: Date, months: number): Date {
  const d = new Date(date.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, lastDay));
  return d;
}

export interface PolicyContext {
  environment: string;
  address: string;
  preset: Preset;
  protectionStatus: "active" | "inactive";
  delegationState: DelegationState;
  /** last buy or borrow (or the treasury's creation when there was none) */
  lastFeeBearingActivityAt: Date;
  feeScheduleUrl: string;
  docsUrl: string;
  executionMode: "wallet" | "managed" | "demo";
}

export function policyStateDocument(ctx: PolicyContext) {
  const { preset } = ctx;
  return {
    object: "policy_state",
    environment: ctx.environment,
    address: ctx.address,
    preset: preset.name,
    ltv_bands: {
      safe: { min: 0, max: preset.liveBand.min },
      live: { min: preset.liveBand.min, max: preset.liveBand.max },
      recommended_ceiling: preset.ceiling,
      park_target: preset.parkTarget,
    },
    plan_version: PLAN_VERSION,
    protection_status: ctx.protectionStatus,
    dormancy_clock: {
      last_fee_bearing_activity_at: ctx.lastFeeBearingActivityAt.toISOString(),
      window_months: DORMANCY_WINDOW_MONTHS,
      expires_at: addMonthsUtc(ctx.lastFeeBearingActivityAt, DORMANCY_WINDOW_MONTHS).toISOString(),
      note: "Any buy or borrow transaction resets the clock.",
    },
    protection_authority: {
      target_ltv_after_rewind: preset.parkTarget,
      trigger_metric: "health_score",
      default_protect_below_health_score: preset.protectBelowHealthScore,
      default_repay_above_health_score: preset.repayAboveHealthScore,
      trigger_rule: `Protect when the health score falls below ${preset.protectBelowHealthScore}; repay is no longer needed above ${preset.repayAboveHealthScore}.`,
      threshold_configurability: "operator-configurable; tighter bands supported",
      price_dynamics: "evaluated continuously as BTC and ETH prices change",
      repayment_source: "user collateral",
      repayment_order: [...REPAYMENT_ORDER],
      scope: `pay down loan and deleverage toward the ${preset.parkTarget}% parked target only`,
      max_swap_slippage_bps: DELEVERAGE_MAX_SLIPPAGE_BPS,
      on_chain_bounds: [...ON_CHAIN_BOUNDS],
      delegation_mechanism: DELEGATION_MECHANISM,
    },
    delegation: {
      model: "revocable additional signer (key quorum) on an operator-owned wallet",
      mechanism: "on-wallet policy (Safe module) that denies all until delegation is approved",
      states: [...DELEGATION_STATES],
      state: ctx.delegationState,
      approval_requires: "operator review of strategy interpretation and policy preview",
      revocation: "operator can revoke future authorization at any time; already-submitted actions may still settle",
      wallet_sovereign_alternative:
        "In wallet execution mode every action returns an unsigned transaction that the agent signs with its own key and relays; the service never holds private keys.",
    },
    monitoring_tier: {
      tier: ctx.protectionStatus === "active" ? "active" : "standby",
      // the public demo shows the spec's example; a treasury states what the engine does for it
      check_frequency: ctx.executionMode === "demo" ? "high-frequency" : CHECK_FREQUENCY[ctx.protectionStatus],
    },
    gas_caps: { ...GAS_CAPS },
    fee_schedule_ref: ctx.feeScheduleUrl,
    invariants: [...FEE_INVARIANTS],
    docs: ctx.docsUrl,
  };
}
