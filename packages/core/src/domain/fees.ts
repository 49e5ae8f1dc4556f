/**
 * Service fee of one execution (spec section 1). Upward legs pay: deposit the
 * deposit fee, convert the buy fee, borrow the cycle fee. Every downward leg is
 * free. Fees are rounded half up to the micro-USDC.
 */
import { tierAt } from "./fee-schedule";
import { applyBps, type Micro } from "./money";

/** which fee an action pays: deposit (funds enter), buy (USDC into BTC/ETH), cycle (borrowing), or none (every downward leg) */
export type FeeKind = "deposit" | "buy" | "cycle" | "none";

export interface Fee {
  feeMicro: Micro;
  feeBps: bigint;
  basis: string;
}

/** the fee of `kind` on `amountMicro` at the ratchet's tier (actions/*.ts declare each action's kind) */
export function feeFor(kind: FeeKind, amountMicro: Micro, tierIndex = 0): Fee {
  const tier = tierAt(tierIndex);
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
