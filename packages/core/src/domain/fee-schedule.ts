/**
 * Fee schedule (spec section 1, rules 1-3 and 6). Deposits and conversions
 * cost 2%; borrowing executions pay the cycle fee, 2% at launch, which steps
 * down as cumulative platform volume crosses the thresholds below. The step is
 * a one-way ratchet: the tier index only grows (see `advanceRatchet`).
 */
import { MICRO_PER_USDC, type Micro } from "./money";
import { PROTECTION_COSTS } from "./protection-terms";

export interface FeeTier {
  tier: string;
  /** cumulative fee-bearing platform volume, micro-USDC, at which the tier starts */
  minVolumeMicro: Micro;
  depositFeeBps: bigint;
  buyFeeBps: bigint;
  cycleFeeBps: bigint;
}

const M = 1_000_000n * MICRO_PER_USDC; // one million USDC in micro-units

export const FEE_TIERS: readonly FeeTier[] = [
  { tier: "launch", minVolumeMicro: 0n, depositFeeBps: 200n, buyFeeBps: 200n, cycleFeeBps: 200n },
  { tier: "growth", minVolumeMicro: 10n * M, depositFeeBps: 200n, buyFeeBps: 200n, cycleFeeBps: 175n },
  { tier: "scale", minVolumeMicro: 50n * M, depositFeeBps: 200n, buyFeeBps: 200n, cycleFeeBps: 150n },
  { tier: "institutional", minVolumeMicro: 250n * M, depositFeeBps: 200n, buyFeeBps: 200n, cycleFeeBps: 125n },
];

export interface RatchetState {
  tierIndex: number;
  platformVolumeMicro: Micro;
}

export const INITIAL_RATCHET: RatchetState = { tierIndex: 0, platformVolumeMicro: 0n };

/** Highest tier whose threshold the volume has reached. */
export function tierIndexForVolume(volume: Micro): number {
  let index = 0;
  FEE_TIERS.forEach((t, i) => {
    if (volume >= t.minVolumeMicro) index = i;
  });
  return index;
}

/**
 * Add fee-bearing volume and move the tier. The tier never goes back: even a
 * (hypothetical) lower volume keeps the tier already reached.
 */
export function advanceRatchet(state: RatchetState, addedVolume: Micro): RatchetState {
  if (addedVolume < 0n) throw new RangeError("volume only grows");
  const platformVolumeMicro = state.platformVolumeMicro + addedVolume;
  const tierIndex = Math.max(state.tierIndex, tierIndexForVolume(platformVolumeMicro));
  return { tierIndex, platformVolumeMicro };
}

export function tierAt(index: number): FeeTier {
  const tier = FEE_TIERS[Math.min(Math.max(index, 0), FEE_TIERS.length - 1)];
  if (!tier) throw new RangeError("no fee tier");
  return tier;
}

const bpsToPct = (bps: bigint): number => Number(bps) / 100;

/** The JSON shape of GET /fees.json (spec 2.16, open object). */
/** the fee schedule document of /fees.json; `freeActions`: the actions that pay no fee (actions/index.ts FREE_ACTIONS) */
export function feeScheduleDocument(state: RatchetState, feeScheduleUrl: string, freeActions: readonly string[]) {
  const current = tierAt(state.tierIndex);
  return {
    object: "service_fee_schedule",
    current_tier: {
      tier: current.tier,
      deposit_fee_pct: bpsToPct(current.depositFeeBps),
      buy_fee_pct: bpsToPct(current.buyFeeBps),
      cycle_fee_pct: bpsToPct(current.cycleFeeBps),
    },
    ratchet: {
      direction: "one_way_down",
      platform_volume_usdc: Number(state.platformVolumeMicro / MICRO_PER_USDC),
      note: "Cycle fees step down as cumulative fee-bearing platform volume crosses each threshold and never step back up.",
    },
    tiers: FEE_TIERS.map((t) => ({
      tier: t.tier,
      min_platform_volume_usdc: Number(t.minVolumeMicro / MICRO_PER_USDC),
      deposit_fee_pct: bpsToPct(t.depositFeeBps),
      buy_fee_pct: bpsToPct(t.buyFeeBps),
      cycle_fee_pct: bpsToPct(t.cycleFeeBps),
    })),
    free_actions: freeActions,
    protection_costs: { ...PROTECTION_COSTS },
    invariants: FEE_INVARIANTS,
    url: feeScheduleUrl,
  };
}

export const FEE_INVARIANTS: string[] = [
  "Deposits cost 2% when funds enter the service.",
  "Converting USDC to BTC/ETH costs 2% of the amount converted.",
  "Borrowing costs 2% of the amount borrowed, per execution, including automated re-leverage cycles (upward legs). The lending protocol's variable interest applies in addition.",
  "Downward legs are always free: auto-repay, deleverage, parking, selling to USDC, repaying, withdrawing, exiting.",
  "Every fee-bearing execution is itemized in an audit trail with the trigger that caused it.",
  "Cycle fees step down with platform volume on a one-way ratchet. The schedule is served at GET /fees.json.",
];
