/**
 * Presets: LTV bands, borrow ceiling and park target, in percent. The balanced
 * preset is the spec's (2.7); conservative and aggressive are this service's
 * choice, documented in docs/DOMAIN.md and served by GET /api/v1/treasuries.
 * Every ceiling stays below the max LTV Aave allows for the collateral mix
 * (73% cbBTC, 80% WETH), so the service rail always binds before Aave's.
 */
export type PresetName = "conservative" | "balanced" | "aggressive";

export const PRESET_NAMES: PresetName[] = ["conservative", "balanced", "aggressive"];

export interface Preset {
  name: PresetName;
  description: string;
  liveBand: { min: number; max: number };
  ceiling: number;
  parkTarget: number;
  /** health score below which protection acts (Aave health factor) */
  protectBelowHealthScore: number;
  /** health score above which auto-repay is no longer needed */
  repayAboveHealthScore: number;
}

export const PRESETS: Record<PresetName, Preset> = {
  conservative: {
    name: "conservative",
    description: "Low leverage: live band 20-35% LTV, ceiling 45%, parks at 15%.",
    liveBand: { min: 20, max: 35 },
    ceiling: 45,
    parkTarget: 15,
    protectBelowHealthScore: 1.5,
    repayAboveHealthScore: 3,
  },
  balanced: {
    name: "balanced",
    description: "The default: live band 35-50% LTV, ceiling 60%, parks at 25%.",
    liveBand: { min: 35, max: 50 },
    ceiling: 60,
    parkTarget: 25,
    protectBelowHealthScore: 1.3,
    repayAboveHealthScore: 3,
  },
  aggressive: {
    name: "aggressive",
    description: "Higher leverage: live band 45-60% LTV, ceiling 65%, parks at 35%.",
    liveBand: { min: 45, max: 60 },
    ceiling: 65,
    parkTarget: 35,
    protectBelowHealthScore: 1.2,
    repayAboveHealthScore: 3,
  },
};

export const DEFAULT_PRESET: PresetName = "balanced";

/** The policy object of a treasury (spec 2.7). */
export function policyOf(preset: Preset): { live_band: { min: number; max: number }; ceiling: number; park_target: number } {
  return { live_band: { ...preset.liveBand }, ceiling: preset.ceiling, park_target: preset.parkTarget };
}

/** Ceiling in basis points, the unit the safety rail compares in. */
export function ceilingBps(preset: Preset): bigint {
  return BigInt(Math.round(preset.ceiling * 100));
}
