/**
 * The queue of Safe transactions of managed actions (issue 15): proposed with
 * the action's receipt, signed by the Safe's owners, executed once by the
 * service's executor.
 *
 * awaiting_signatures -> executing (claimed by one executor, a lease) ->
 * executed | failed; awaiting_signatures -> expired (its time passed, never
 * executed by the service). The executor writes the transaction it signs
 * (hash and raw bytes) on the record before sending it, so an executor that
 * takes over an expired claim re-sends those bytes and reads their receipt,
 * never signing a second execution; the Safe's own nonce makes a second
 * execution of the same Safe transaction impossible on chain as well.
 */
import type { TreasuryAction } from "@treasury/core/actions";
import type { Address, Hex } from "viem";
import type { SafeTx } from "../chain/safe-transaction";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { Db } from "./db";
import { leaseUntil } from "./lease";
import { rowReader, type RowOf } from "./schema/table";
import { safeTransactions } from "./schema/tables/protection";

export type SafeTxStatus = RowOf<typeof safeTransactions>["status"];

export interface SafeCall {
  kind: string;
  to: Address;
  value: string;
  data: Hex;
  summary: Record<string, unknown>;
}

export interface OwnerSignature {
  owner: Address;
  signature: Hex;
  submitted_at: string;
}

export interface SafeTransactionRecord {
  id: string;
  treasuryId: string;
  /** the receipt this execution completes (deposit_id, conversion_id, borrow_id, repayment_id) */
  executionId: string;
  chain: TreasuryChain;
  safe: Address;
  action: TreasuryAction;
  amountMicro: bigint;
  feeMicro: bigint;
  /** the request as checked at proposal (params, fee bps and basis, trigger), checked again at execution */
  request: { params: Record<string, unknown>; feeBps: number; feeBasis: string; trigger: string };
  safeTx: SafeTx;
  safeTxHash: Hex;
  calls: SafeCall[];
  signatures: OwnerSignature[];
  status: SafeTxStatus;
  holder: string | null;
  leaseExpiresAt: string | null;
  /** the executor's transaction, written before it is sent */
  sent: { hash: Hex; raw: Hex; nonce: number } | null;
  txHash: Hex | null;
  failure: { error: string; message: string } | null;
  /** what its execution cost the automation key (executed or reverted on chain), USD at the oracle's ETH price */
  gasUsd: number | null;
  createdAt: string;
  expiresAt: string;
  updatedAt: string;
}

const fromRow: (raw: unknown) => SafeTransactionRecord = rowReader(safeTransactions);

export class SafeTransactionStore {
  constructor(private readonly db: Db) {}

  async insert(t: SafeTransactionRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO safe_transactions (id, treasury_id, execution_id, chain, safe, action, amount_micro, fee_micro, request, safe_tx, safe_tx_hash, calls, signatures, status, created_at, expires_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      t.id,
      t.treasuryId,
      t.executionId,
      t.chain,
      t.safe,
      t.action,
      t.amountMicro.toString(),
      t.feeMicro.toString(),
      JSON.stringify(t.request),
      JSON.stringify(t.safeTx),
      t.safeTxHash,
      JSON.stringify(t.calls),
      JSON.stringify(t.signatures),
      t.status,
      t.createdAt,
      t.expiresAt,
      t.updatedAt,
    );
  }

  async get(id: string): Promise<SafeTransactionRecord | undefined> {
    const r = await this.db.get("SELECT * FROM safe_transactions WHERE id = ?", id);
    return r ? fromRow(r) : undefined;
  }

  /** a treasury's Safe transactions, newest first; `open` only those awaiting signatures or executing */
  async list(treasuryId: string, opts: { open?: boolean; limit?: number } = {}): Promise<SafeTransactionRecord[]> {
    const rows = await this.db.all(
      `SELECT * FROM safe_transactions WHERE treasury_id = ? ${opts.open ? "AND status IN ('awaiting_signatures','executing')" : ""} ORDER BY created_at DESC, id DESC LIMIT ?`,
      treasuryId,
      opts.limit ?? 100,
    );
    return rows.map(fromRow);
  }

  /** the treasury's open Safe transaction (one at a time: a new action waits for it), if any, not expired at `now` */
  async openFor(treasuryId: string, now: string): Promise<SafeTransactionRecord | undefined> {
    const r = await this.db.get(
      "SELECT * FROM safe_transactions WHERE treasury_id = ? AND (status = 'executing' OR (status = 'awaiting_signatures' AND expires_at > ?)) ORDER BY created_at DESC LIMIT 1",
      treasuryId,
      now,
    );
    return r ? fromRow(r) : undefined;
  }

  /** an owner's signature, added while the transaction awaits signatures (one per owner: a second one replaces nothing) */
  async addSignature(id: string, s: OwnerSignature, now: string): Promise<"added" | "already_signed" | "not_open"> {
    return this.db.transaction(async () => {
      const row = await this.db.get("SELECT * FROM safe_transactions WHERE id = ?", id);
      const t = row ? fromRow(row) : undefined;
      if (!t || t.status !== "awaiting_signatures" || t.expiresAt <= now) return "not_open";
      if (t.signatures.some((x) => x.owner.toLowerCase() === s.owner.toLowerCase())) return "already_signed";
      await this.db.run(
        "UPDATE safe_transactions SET signatures = ?, updated_at = ? WHERE id = ? AND status = 'awaiting_signatures'",
        JSON.stringify([...t.signatures, s]),
        now,
        id,
      );
      return "added";
    });
  }

  /** awaiting signatures whose time passed, still marked open */
  async expiredOpen(now: string): Promise<SafeTransactionRecord[]> {
    return (
      await this.db.all("SELECT * FROM safe_transactions WHERE status = 'awaiting_signatures' AND expires_at <= ? ORDER BY created_at LIMIT 50", now)
    ).map(fromRow);
  }

  /** expired: the service will not execute it (in the caller's transaction, with its receipt) */
  async markExpired(id: string, now: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE safe_transactions SET status = 'expired', updated_at = ? WHERE id = ? AND status = 'awaiting_signatures' AND expires_at <= ?",
          now,
          id,
          now,
        )
      ).changes === 1
    );
  }

  /** candidates for the executor: signed by at least `minSignatures` owners, or an executing claim whose lease lapsed */
  async executable(now: string): Promise<SafeTransactionRecord[]> {
    const rows = await this.db.all(
      "SELECT * FROM safe_transactions WHERE (status = 'awaiting_signatures' AND signatures <> '[]' AND expires_at > ?) OR (status = 'executing' AND lease_expires_at <= ?) ORDER BY created_at LIMIT 50",
      now,
      now,
    );
    return rows.map(fromRow);
  }

  /**
   * Claim one for `holder`: an open one, or an executing one whose lease
   * lapsed (taken over: its `sent` bytes are reconciled first). Null when
   * another executor holds it or it is no longer open.
   */
  async claim(id: string, holder: string, now: Date): Promise<SafeTransactionRecord | null> {
    return this.db.transaction(async () => {
      const row = await this.db.get("SELECT * FROM safe_transactions WHERE id = ?", id);
      const iso = now.toISOString();
      if (!row) return null;
      const t = fromRow(row);
      const open = t.status === "awaiting_signatures" && t.expiresAt > iso;
      const lapsed = t.status === "executing" && t.leaseExpiresAt !== null && t.leaseExpiresAt <= iso;
      if (!open && !lapsed) return null;
      await this.db.run(
        "UPDATE safe_transactions SET status = 'executing', holder = ?, lease_expires_at = ?, updated_at = ? WHERE id = ? AND status = ?",
        holder,
        leaseUntil(now),
        iso,
        id,
        t.status,
      );
      return { ...t, status: "executing", holder, leaseExpiresAt: leaseUntil(now) };
    });
  }

  /** the executor's signed transaction, written before it is sent (fenced by holder) */
  async recordSent(id: string, holder: string, sent: { hash: Hex; raw: Hex; nonce: number }, now: Date): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE safe_transactions SET sent = ?, lease_expires_at = ?, updated_at = ? WHERE id = ? AND status = 'executing' AND holder = ?",
          JSON.stringify(sent),
          leaseUntil(now),
          now.toISOString(),
          id,
          holder,
        )
      ).changes === 1
    );
  }

  /** the end of a claim: executed (with its transaction hash) or failed (with its reason), fenced by holder; the gas its transaction cost, if one was mined */
  async finish(
    id: string,
    holder: string,
    end: ({ status: "executed"; txHash: Hex } | { status: "failed"; failure: { error: string; message: string }; txHash?: Hex }) & { gasUsd?: number },
    now: string,
  ): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE safe_transactions SET status = ?, tx_hash = ?, failure = ?, gas_usd = ?, lease_expires_at = NULL, updated_at = ? WHERE id = ? AND status = 'executing' AND holder = ?",
          end.status,
          end.txHash ?? null,
          end.status === "failed" ? JSON.stringify(end.failure) : null,
          end.gasUsd ?? null,
          now,
          id,
          holder,
        )
      ).changes === 1
    );
  }

  /** gas the automation key spent executing a Safe's transactions in the calendar month (UTC) of `at` */
  async monthGasUsd(safe: string, at: Date): Promise<number> {
    const row = await this.db.get<{ total: number | string }>(
      "SELECT COALESCE(SUM(gas_usd), 0) AS total FROM safe_transactions WHERE lower(safe) = lower(?) AND gas_usd IS NOT NULL AND substr(updated_at, 1, 7) = ?",
      safe,
      at.toISOString().slice(0, 7),
    );
    return Number(row?.total ?? 0);
  }

  /** give a claim back untouched (nothing was sent): open again for its signatures */
  async release(id: string, holder: string, now: string): Promise<void> {
    await this.db.run(
      "UPDATE safe_transactions SET status = 'awaiting_signatures', holder = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ? AND status = 'executing' AND holder = ? AND sent IS NULL",
      now,
      id,
      holder,
    );
  }
}
