/** Unsigned transaction envelopes (spec 2.5, 3.2) and their ordered steps. */
import type { TreasuryAction } from "@treasury/core/actions";
import type { Micro } from "@treasury/core/domain/money";
import type { Db } from "./db";
import { rowReader, type RowOf } from "./schema/table";
import { envelopes, envelopeSteps } from "./schema/tables/actions";

export type EnvelopeStatus = RowOf<typeof envelopes>["status"];

export interface EnvelopeRecord {
  txId: string;
  treasuryId: string;
  action: TreasuryAction;
  amountMicro: Micro;
  feeMicro: Micro;
  /** the fee as it was signed: its rate and basis (the fee of the envelope is the fee) */
  feeBps: number | null;
  feeBasis: string | null;
  params: Record<string, unknown>;
  chain: string;
  chainId: number;
  status: EnvelopeStatus;
  createdAt: string;
  expiresAt: string;
  completedAt: string | null;
}

export interface StepRecord {
  txId: string;
  envelopeTxId: string;
  seq: number;
  kind: string;
  to: `0x${string}`;
  data: `0x${string}`;
  value: string;
  summary: Record<string, unknown>;
  /** awaiting_signature -> broadcasting (claimed: hash recorded before sending) -> relayed (mined, recorded) */
  status: StepStatus;
  txHash: string | null;
  signedTransaction: string | null;
  receipt: Record<string, unknown> | null;
  relayedAt: string | null;
  signer: string | null;
  txNonce: number | null;
  broadcastAt: string | null;
  /** signatures of this step that did not execute (reverted, refused by the node, dropped) */
  failedAttempts: { tx_hash: string; reason: string; at: string }[];
}

export type StepStatus = RowOf<typeof envelopeSteps>["status"];

const envelopeFromRow: (raw: unknown) => EnvelopeRecord = rowReader(envelopes);
const stepFromRow: (raw: unknown) => StepRecord = rowReader(envelopeSteps);

export class EnvelopeStore {
  constructor(private readonly db: Db) {}

  async insert(e: EnvelopeRecord, steps: StepRecord[]): Promise<void> {
    await this.db.run(
      `INSERT INTO envelopes (tx_id, treasury_id, action, amount_micro, fee_micro, fee_bps, fee_basis, params, chain, chain_id, status, created_at, expires_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      e.txId,
      e.treasuryId,
      e.action,
      e.amountMicro.toString(),
      e.feeMicro.toString(),
      e.feeBps,
      e.feeBasis,
      JSON.stringify(e.params),
      e.chain,
      e.chainId,
      e.status,
      e.createdAt,
      e.expiresAt,
      e.completedAt,
    );
    for (const s of steps) {
      await this.db.run(
        `INSERT INTO envelope_steps (tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status, tx_hash, signed_transaction, receipt, relayed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        s.txId,
        s.envelopeTxId,
        s.seq,
        s.kind,
        s.to,
        s.data,
        s.value,
        JSON.stringify(s.summary),
        s.status,
        s.txHash,
        s.signedTransaction,
        s.receipt ? JSON.stringify(s.receipt) : null,
        s.relayedAt,
      );
    }
  }

  async get(txId: string): Promise<EnvelopeRecord | undefined> {
    const row = await this.db.get("SELECT * FROM envelopes WHERE tx_id = ?", txId);
    return row ? envelopeFromRow(row) : undefined;
  }

  async step(txId: string): Promise<StepRecord | undefined> {
    const row = await this.db.get("SELECT * FROM envelope_steps WHERE tx_id = ?", txId);
    return row ? stepFromRow(row) : undefined;
  }

  async steps(envelopeTxId: string): Promise<StepRecord[]> {
    return (await this.db.all("SELECT * FROM envelope_steps WHERE envelope_tx_id = ? ORDER BY seq", envelopeTxId)).map(stepFromRow);
  }

  /**
   * The envelope of a treasury that blocks a new action: awaiting signature
   * and not expired at `nowIso`, or with a step being broadcast (expired or
   * not: its transaction may still be mined and must be reconciled first).
   */
  async pendingFor(treasuryId: string, nowIso: string): Promise<EnvelopeRecord | undefined> {
    const row = await this.db.get(
      `SELECT e.* FROM envelopes e WHERE e.treasury_id = ? AND e.status = 'awaiting_signature'
           AND (e.expires_at > ? OR EXISTS (SELECT 1 FROM envelope_steps s WHERE s.envelope_tx_id = e.tx_id AND s.status = 'broadcasting'))
         ORDER BY e.created_at DESC LIMIT 1`,
      treasuryId,
      nowIso,
    );
    return row ? envelopeFromRow(row) : undefined;
  }

  /** envelopes awaiting signature that expire before `beforeIso`, none of whose steps is being broadcast (the deadline watch) */
  async awaitingExpiringBefore(beforeIso: string, limit: number): Promise<EnvelopeRecord[]> {
    const rows = await this.db.all(
      `SELECT e.* FROM envelopes e WHERE e.status = 'awaiting_signature' AND e.expires_at <= ?
         AND NOT EXISTS (SELECT 1 FROM envelope_steps s WHERE s.envelope_tx_id = e.tx_id AND s.status = 'broadcasting')
       ORDER BY e.expires_at LIMIT ?`,
      beforeIso,
      limit,
    );
    return rows.map(envelopeFromRow);
  }

  /** steps of a treasury claimed for broadcast and not yet reconciled with the chain */
  async broadcastingFor(treasuryId: string): Promise<StepRecord[]> {
    return (
      await this.db.all(
        "SELECT s.* FROM envelope_steps s JOIN envelopes e ON e.tx_id = s.envelope_tx_id WHERE e.treasury_id = ? AND s.status = 'broadcasting' ORDER BY s.broadcast_at",
        treasuryId,
      )
    ).map(stepFromRow);
  }

  /** every step awaiting reconciliation (for a sweep) */
  async allBroadcasting(): Promise<StepRecord[]> {
    return (await this.db.all("SELECT * FROM envelope_steps WHERE status = 'broadcasting' ORDER BY broadcast_at")).map(stepFromRow);
  }

  /**
   * Claim a step for broadcast: only if it still awaits a signature and every
   * earlier step of its envelope is relayed. The hash is recorded before the
   * transaction is sent, so a crash leaves a record to reconcile. False when
   * another signature of the step (or of an earlier one) holds it.
   */
  async claimStep(txId: string, c: { txHash: string; signed: string; signer: string; nonce: number; at: string }): Promise<boolean> {
    return (
      (
        await this.db.run(
          `UPDATE envelope_steps SET status = 'broadcasting', tx_hash = ?, signed_transaction = ?, signer = ?, tx_nonce = ?, broadcast_at = ?
           WHERE tx_id = ? AND status = 'awaiting_signature'
             AND NOT EXISTS (SELECT 1 FROM envelope_steps p WHERE p.envelope_tx_id = envelope_steps.envelope_tx_id AND p.seq < envelope_steps.seq AND p.status != 'relayed')`,
          c.txHash,
          c.signed,
          c.signer,
          c.nonce,
          c.at,
          txId,
        )
      ).changes === 1
    );
  }

  /** a claimed step did not execute (refused by the node, reverted, dropped): it awaits a new signature again */
  async unclaimStep(txId: string, txHash: string, reason: string, at: string): Promise<boolean> {
    const step = await this.step(txId);
    if (!step || step.status !== "broadcasting" || step.txHash !== txHash) return false;
    const attempts = [...step.failedAttempts, { tx_hash: txHash, reason, at }];
    return (
      (
        await this.db.run(
          "UPDATE envelope_steps SET status = 'awaiting_signature', tx_hash = NULL, signed_transaction = NULL, signer = NULL, tx_nonce = NULL, broadcast_at = NULL, failed_attempts = ? WHERE tx_id = ? AND status = 'broadcasting' AND tx_hash = ?",
          JSON.stringify(attempts),
          txId,
          txHash,
        )
      ).changes === 1
    );
  }

  /** a claimed step was mined successfully: relayed, with its receipt */
  async finishStep(txId: string, txHash: string, receipt: Record<string, unknown>, at: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE envelope_steps SET status = 'relayed', receipt = ?, relayed_at = ? WHERE tx_id = ? AND status = 'broadcasting' AND tx_hash = ?",
          JSON.stringify(receipt),
          at,
          txId,
          txHash,
        )
      ).changes === 1
    );
  }

  /** sandbox relay (nothing is sent): awaiting -> relayed in one step, only if it was still awaiting */
  async markStepRelayed(txId: string, txHash: string, signed: string, receipt: Record<string, unknown>, at: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE envelope_steps SET status = 'relayed', tx_hash = ?, signed_transaction = ?, receipt = ?, relayed_at = ? WHERE tx_id = ? AND status = 'awaiting_signature'",
          txHash,
          signed,
          JSON.stringify(receipt),
          at,
          txId,
        )
      ).changes === 1
    );
  }

  /**
   * A step the sandbox carried out without a signature (a one-signature
   * relay): relayed with no transaction of its own, the receipt saying how.
   * Conditional on the step still awaiting a signature: the claim.
   */
  async provideStep(txId: string, receipt: Record<string, unknown>, at: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE envelope_steps SET status = 'relayed', receipt = ?, relayed_at = ? WHERE tx_id = ? AND status = 'awaiting_signature'",
          JSON.stringify(receipt),
          at,
          txId,
        )
      ).changes === 1
    );
  }

  /** the receipt of a provided step once the sandbox carried it out */
  async provideReceipt(txId: string, receipt: Record<string, unknown>): Promise<void> {
    await this.db.run("UPDATE envelope_steps SET receipt = ? WHERE tx_id = ? AND status = 'relayed' AND tx_hash IS NULL", JSON.stringify(receipt), txId);
  }

  /** undo provideStep when the sandbox could not carry the step out */
  async unprovideStep(txId: string): Promise<void> {
    await this.db.run(
      "UPDATE envelope_steps SET status = 'awaiting_signature', receipt = NULL, relayed_at = NULL WHERE tx_id = ? AND status = 'relayed' AND tx_hash IS NULL",
      txId,
    );
  }

  /** replace an envelope's params (its flags: one_signature) */
  async setParams(txId: string, params: Record<string, unknown>): Promise<void> {
    await this.db.run("UPDATE envelopes SET params = ? WHERE tx_id = ?", JSON.stringify(params), txId);
  }

  async setStatus(txId: string, status: EnvelopeStatus, at: string | null): Promise<void> {
    await this.db.run("UPDATE envelopes SET status = ?, completed_at = COALESCE(?, completed_at) WHERE tx_id = ?", status, at, txId);
  }
}
