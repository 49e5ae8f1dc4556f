/**
 * Service fee of one execution (spec section 1). Upward legs pay: deposit the
 * deposit fee, convert the buy fee, borrow the cycle fee. Every downward leg is
 * free. Fees are rounded half up to the micro-USDC.
 */
import { tierAt } from "./fee-schedule";
import { applyBps, type Micro } from "./money";

export const ACTIONS = [
  "borrow",
  "deposit",
  "convert",
  "repay",
  "sell",
  "withdraw",
  "exit",
  "protection",
  "auto_repay",
  "auto_deleverage",
] as const;
export type Action = (typeof ACTIONS)[number];

/** The four actions an authenticated treasury executes (spec 4.5). */
export const TREASURY_ACTIONS = ["deposit", "convert", "borrow", "repay"] as const;
export type TreasuryAction = (typeof TREASURY_ACTIONS)[number];

export type FeeKind = "deposit" | "buy" | "cycle" | "none";

export function feeKindOf(action: Action): FeeKind {
  switch (action) {
    case "deposit":
      return "deposit";
    case "convert":
      return "buy";
    case "borrow":
      return "cycle";
    default:
      return "none";
  }
}

export function isUpwardLeg(action: Action): boolean {
  return feeKindOf(action) !== "none";
}

export interface Fee {
  feeMicro: Micro;
  feeBps: bigint;
  basis: string;
}

export function feeFor(action: Action, amountMicro: Micro, tierIndex = 0): Fee {
  const tier = tierAt(tierIndex);
  const kind = feeKindOf(action);
  const bps = kind === "deposit" ? tier.depositFeeBps : kind === "buy" ? tier.buyFeeBps : kind === "cycle" ? tier.cycleFeeBps : 0n;
  const pct = Number(bps) / 100;
  const basis =
    kind === "deposit"
      ? `${pct}% of the amount when funds enter the service`
      : kind === "buy"
        ? `${pct}% of the amount converted from USDC to BTC/ETH`
        : kind === "cycle"
          ? `${pct}% of the amount borrowed per execution (cycle fee, tier ${tier.tier}); the lending protocol's variable interest applies in addition`
          : "downward legs are free (0%)";
  return { feeMicro: applyBps(amountMicro, bps), feeBps: bps, basis };
}
