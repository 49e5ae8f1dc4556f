/**
 * x402 payments seen by the gateway, one row per (payer, authorization
 * nonce). The row is the lock that keeps one payment from running a handler
 * twice. It is held under a lease: a request that died between locking and
 * answering leaves a row that the same proof's retry takes over, so the
 * payment is settled once (the facilitator settles an authorization at most
 * once) and the request served once, never charged again.
 */
import { getAddress } from "viem";
import { formatDecimal } from "@treasury/core/domain/money";
import type { EventStore } from "./event-store";
import type { Db } from "./db";
import { holderGone } from "./instance-store";
import { leaseUntil } from "./lease";
import { rowReader } from "./schema/table";
import { x402Payments } from "./schema/tables/actions";

export type PaymentLock =
  /** first sight of this proof, or a dead request's unsettled lock: settle it */
  | { kind: "locked"; takenOver: boolean }
  /** a dead request's payment that was settled and never served: serve it without charging */
  | { kind: "settled_unserved"; transactionHash: string | null; treasuryId: string | null }
  /** a live request holds it */
  | { kind: "busy" }
  /** settled and served already */
  | { kind: "used" };

const readLock = rowReader(x402Payments, { pick: ["state", "outcome_status", "lease_holder", "lease_expires_at", "route", "transaction_hash", "treasury_id"] });
const readPending = rowReader(x402Payments, { pick: ["pending_settlement", "treasury_id"] });

export class PaymentStore {
  constructor(
    private readonly db: Db,
    /** the treasury's event log: a settlement writes its `payment.settled` in its own transaction */
    private readonly events?: EventStore,
  ) {}

  lock(p: { payer: string; nonce: string; route: string; amountAtomic: bigint; treasuryId: string | null; holder: string; now: Date }): Promise<PaymentLock> {
    const payer = p.payer.toLowerCase();
    const nonce = p.nonce.toLowerCase();
    const at = p.now.toISOString();
    return this.db.transaction(async (): Promise<PaymentLock> => {
      const inserted = await this.db.run(
        "INSERT INTO x402_payments (payer, nonce, route, amount_atomic, state, treasury_id, created_at, lease_holder, lease_expires_at) VALUES (?, ?, ?, ?, 'locked', ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        payer,
        nonce,
        p.route,
        p.amountAtomic.toString(),
        p.treasuryId,
        at,
        p.holder,
        leaseUntil(p.now),
      );
      if (inserted.changes === 1) return { kind: "locked", takenOver: false };
      const raw = await this.db.get(
        "SELECT state, outcome_status, lease_holder, lease_expires_at, route, transaction_hash, treasury_id FROM x402_payments WHERE payer = ? AND nonce = ?",
        payer,
        nonce,
      );
      const row = raw ? readLock(raw) : undefined;
      if (!row || row.outcomeStatus !== null || row.route !== p.route) return { kind: "used" };
      if (row.leaseExpiresAt === null) return { kind: row.state === "settled" ? "used" : "busy" };
      // held by a live request: its lease runs and its process heartbeats
      if (row.leaseExpiresAt > at && !(await holderGone(this.db, row.leaseHolder, p.now))) return { kind: "busy" };
      const taken = await this.db.run(
        "UPDATE x402_payments SET lease_holder = ?, lease_expires_at = ? WHERE payer = ? AND nonce = ? AND lease_holder IS NOT DISTINCT FROM ?",
        p.holder,
        leaseUntil(p.now),
        payer,
        nonce,
        row.leaseHolder,
      );
      if (taken.changes !== 1) return { kind: "busy" };
      return row.state === "settled"
        ? { kind: "settled_unserved", transactionHash: row.transactionHash, treasuryId: row.treasuryId }
        : { kind: "locked", takenOver: true };
    });
  }

  /** has this payer a settled payment here (kept 7 days after settlement: store/retention.ts)? */
  async hasSettled(payer: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS one FROM x402_payments WHERE payer = ? AND state = 'settled' LIMIT 1", payer.toLowerCase())) !== undefined;
  }

  /** has this service locked this payment before (whatever became of it)? */
  async seen(payer: string, nonce: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS one FROM x402_payments WHERE payer = ? AND nonce = ?", payer.toLowerCase(), nonce.toLowerCase())) !== undefined;
  }

  async renew(payer: string, nonce: string, holder: string, now: Date): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE x402_payments SET lease_expires_at = ? WHERE payer = ? AND nonce = ? AND lease_holder = ? AND outcome_status IS NULL",
          leaseUntil(now),
          payer.toLowerCase(),
          nonce.toLowerCase(),
          holder,
        )
      ).changes === 1
    );
  }

  /** forget a lock whose payment was not settled (nothing was charged, nothing remains) */
  async release(payer: string, nonce: string, holder: string): Promise<void> {
    await this.db.run(
      "DELETE FROM x402_payments WHERE payer = ? AND nonce = ? AND state = 'locked' AND lease_holder = ?",
      payer.toLowerCase(),
      nonce.toLowerCase(),
      holder,
    );
  }

  /**
   * Give up a lock taken over from a dead request without deleting it: its
   * authorization may have been settled before the crash, so the row stays,
   * free for the next retry to take over at once.
   */
  async lapse(payer: string, nonce: string, holder: string, now: Date): Promise<void> {
    await this.db.run(
      "UPDATE x402_payments SET lease_holder = NULL, lease_expires_at = ? WHERE payer = ? AND nonce = ? AND lease_holder = ?",
      now.toISOString(),
      payer.toLowerCase(),
      nonce.toLowerCase(),
      holder,
    );
  }

  /** `amount`: what was charged when it differs from the locked amount (an `upto` payment's use, below its maximum) */
  async settled(payer: string, nonce: string, transactionHash: string, treasuryId: string, at: string, amount?: bigint): Promise<void> {
    await this.db.transaction(async () => {
      const before = await this.db.get<{ state: string; route: string; amount_atomic: string }>(
        "SELECT state, route, amount_atomic FROM x402_payments WHERE payer = ? AND nonce = ?",
        payer.toLowerCase(),
        nonce.toLowerCase(),
      );
      await this.markSettled(payer, nonce, transactionHash, treasuryId, at, amount);
      // the first settlement of a payment for a treasury is its event (a settlement recorded again is not)
      const known = treasuryId !== "" && (await this.db.get("SELECT 1 AS one FROM treasuries WHERE id = ?", treasuryId)) !== undefined;
      if (this.events && before?.state === "locked" && known && /^0x[0-9a-fA-F]{40}$/.test(payer)) {
        await this.events.append(
          treasuryId,
          "payment.settled",
          {
            payer: getAddress(payer),
            amount_usdc: formatDecimal(amount ?? BigInt(before.amount_atomic), 6),
            route: before.route,
            transaction: transactionHash || null,
          },
          { now: new Date(at) },
        );
      }
    });
  }

  private async markSettled(payer: string, nonce: string, transactionHash: string, treasuryId: string, at: string, amount?: bigint): Promise<void> {
    await this.db.run(
      "UPDATE x402_payments SET state = 'settled', transaction_hash = ?, treasury_id = ?, settled_at = ?, pending_settlement = NULL, amount_atomic = COALESCE(?, amount_atomic) WHERE payer = ? AND nonce = ?",
      transactionHash,
      treasuryId,
      at,
      amount === undefined ? null : amount.toString(),
      payer.toLowerCase(),
      nonce.toLowerCase(),
    );
  }

  /**
   * The settlement was sent and not answered (its outcome is unknown): keep the lock, with the proof and
   * requirements to settle again, and lapse its lease so the retry takes it over at once.
   */
  async pending(payer: string, nonce: string, holder: string, settlement: string, now: Date): Promise<void> {
    await this.db.run(
      "UPDATE x402_payments SET pending_settlement = ?, lease_holder = NULL, lease_expires_at = ? WHERE payer = ? AND nonce = ? AND lease_holder = ?",
      settlement,
      now.toISOString(),
      payer.toLowerCase(),
      nonce.toLowerCase(),
      holder,
    );
  }

  /** what a payment whose settlement's outcome is unknown was sent with, or undefined (settled, or never pending) */
  async pendingSettlement(payer: string, nonce: string): Promise<{ settlement: string; treasuryId: string | null } | undefined> {
    const raw = await this.db.get(
      "SELECT pending_settlement, treasury_id FROM x402_payments WHERE payer = ? AND nonce = ? AND state = 'locked' AND pending_settlement IS NOT NULL",
      payer.toLowerCase(),
      nonce.toLowerCase(),
    );
    const row = raw ? readPending(raw) : undefined;
    return row ? { settlement: row.pendingSettlement!, treasuryId: row.treasuryId } : undefined;
  }

  /** a pending settlement that the facilitator then refused: nothing was charged, nothing is to settle */
  async settlementFailed(payer: string, nonce: string): Promise<void> {
    await this.db.run(
      "UPDATE x402_payments SET pending_settlement = NULL WHERE payer = ? AND nonce = ? AND state = 'locked'",
      payer.toLowerCase(),
      nonce.toLowerCase(),
    );
  }

  /** the request this payment paid for answered (or its payment became a prepaid credit): the payment is spent */
  async outcome(payer: string, nonce: string, status: number): Promise<void> {
    await this.db.run(
      "UPDATE x402_payments SET outcome_status = ?, lease_holder = NULL, lease_expires_at = NULL WHERE payer = ? AND nonce = ?",
      status,
      payer.toLowerCase(),
      nonce.toLowerCase(),
    );
  }

  /**
   * Forget settled payments settled before `cutoff`: long after their authorization's validBefore, when
   * the chain itself refuses the spent nonce. A lock that never reached an outcome (a crash to reconcile)
   * is kept whatever its age.
   */
  async purgeSettledBefore(cutoff: Date): Promise<number> {
    return (await this.db.run("DELETE FROM x402_payments WHERE state = 'settled' AND settled_at < ?", cutoff.toISOString())).changes;
  }

  async count(): Promise<number> {
    return (await this.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settled'"))!.n;
  }
}
