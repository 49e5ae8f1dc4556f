/**
 * x402 payments seen by the gateway, one row per (payer, authorization
 * nonce). The row is the lock that keeps one payment from running a handler
 * twice: a second request with the same proof finds it and is refused.
 */
import type { Db } from "./db";

export class PaymentStore {
  constructor(private readonly db: Db) {}

  /** claim (payer, nonce); false when the payment was already seen */
  lock(p: { payer: string; nonce: string; route: string; amountAtomic: bigint; treasuryId: string | null; at: string }): boolean {
    return (
      this.db
        .prepare("INSERT OR IGNORE INTO x402_payments (payer, nonce, route, amount_atomic, state, treasury_id, created_at) VALUES (?, ?, ?, ?, 'locked', ?, ?)")
        .run(p.payer.toLowerCase(), p.nonce.toLowerCase(), p.route, p.amountAtomic.toString(), p.treasuryId, p.at).changes === 1
    );
  }

  /** forget a lock whose payment was not settled (nothing was charged, nothing remains) */
  release(payer: string, nonce: string): void {
    this.db.prepare("DELETE FROM x402_payments WHERE payer = ? AND nonce = ? AND state = 'locked'").run(payer.toLowerCase(), nonce.toLowerCase());
  }

  settled(payer: string, nonce: string, transactionHash: string, treasuryId: string, at: string): void {
    this.db
      .prepare("UPDATE x402_payments SET state = 'settled', transaction_hash = ?, treasury_id = ?, settled_at = ? WHERE payer = ? AND nonce = ?")
      .run(transactionHash, treasuryId, at, payer.toLowerCase(), nonce.toLowerCase());
  }

  outcome(payer: string, nonce: string, status: number): void {
    this.db.prepare("UPDATE x402_payments SET outcome_status = ? WHERE payer = ? AND nonce = ?").run(status, payer.toLowerCase(), nonce.toLowerCase());
  }

  count(): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settled'").get() as { n: number }).n;
  }
}
