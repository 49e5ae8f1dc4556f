/**
 * The signer agent's spending limits, in exact micro-USDC, over its audit log:
 * the daily signing cap (what decoded calldata moves, signed today plus what is
 * being signed right now) and the x402 price cap and daily budget. A
 * reservation is checked and taken in one synchronous step, so concurrent
 * signatures in this process cannot share the same headroom.
 */
import { formatDecimal } from "@treasury/core/domain/money";
import type { AuditLog } from "./audit-log";
import { CapExceeded } from "./errors";

export { CapExceeded };

export class SpendingCaps {
  /** micro-USDC being signed right now (reserved, not yet in the log) */
  private reserved = 0n;

  constructor(private readonly audit: AuditLog) {}

  /**
   * Reserve `moved` against the daily cap; throws CapExceeded with the reason.
   * Returns the release, to call once the signature is logged (or refused).
   */
  reserveSigning(moved: bigint, capMicro: bigint): () => void {
    const today = this.audit.todayMicro("signed") + this.reserved;
    if (today + moved > capMicro) {
      throw new CapExceeded(
        `${formatDecimal(moved, 6)} USDC would exceed the daily cap of ${formatDecimal(capMicro, 6)} (signed or being signed today: ${formatDecimal(today, 6)})`,
      );
    }
    this.reserved += moved;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.reserved -= moved;
    };
  }

  /** micro-USDC left of today's x402 budget (none below zero) */
  x402Left(dailyBudgetMicro: bigint): bigint {
    const left = dailyBudgetMicro - this.audit.todayMicro("x402_payment");
    return left > 0n ? left : 0n;
  }

  /** why paying `price` for one request is not allowed, or null */
  x402Refusal(price: bigint, maxPriceMicro: bigint, dailyBudgetMicro: bigint): string | null {
    if (price > maxPriceMicro) return `x402 price ${formatDecimal(price, 6)} USDC is above the policy cap of ${formatDecimal(maxPriceMicro, 6)}`;
    const spent = this.audit.todayMicro("x402_payment");
    if (spent + price > dailyBudgetMicro)
      return `paying ${formatDecimal(price, 6)} USDC would exceed today's x402 budget of ${formatDecimal(dailyBudgetMicro, 6)} (spent ${formatDecimal(spent, 6)})`;
    return null;
  }
}
