/** Unsigned transaction envelopes (spec 2.5, 3.2) and their ordered steps. */
import type { TreasuryAction } from "../domain/fees";
import type { Micro } from "../domain/money";
import type { Db } from "./db";

export type EnvelopeStatus = "awaiting_signature" | "relayed" | "expired";

export interface EnvelopeRecord {
  txId: string;
  treasuryId: string;
  action: TreasuryAction;
  amountMicro: Micro;
  feeMicro: Micro;
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
  status: "awaiting_signature" | "relayed";
  txHash: string | null;
  signedTransaction: string | null;
  receipt: Record<string, unknown> | null;
  relayedAt: string | null;
}

interface EnvelopeRow {
  tx_id: string;
  treasury_id: string;
  action: TreasuryAction;
  amount_micro: string;
  fee_micro: string;
  params: string;
  chain: string;
  chain_id: number;
  status: EnvelopeStatus;
  created_at: string;
  expires_at: string;
  completed_at: string | null;
}

interface StepRow {
  tx_id: string;
  envelope_tx_id: string;
  seq: number;
  kind: string;
  to_address: string;
  data: string;
  value: string;
  summary: string;
  status: "awaiting_signature" | "relayed";
  tx_hash: string | null;
  signed_transaction: string | null;
  receipt: string | null;
  relayed_at: string | null;
}

const envelopeFromRow = (r: EnvelopeRow): EnvelopeRecord => ({
  txId: r.tx_id,
  treasuryId: r.treasury_id,
  action: r.action,
  amountMicro: BigInt(r.amount_micro),
  feeMicro: BigInt(r.fee_micro),
  params: JSON.parse(r.params) as Record<string, unknown>,
  chain: r.chain,
  chainId: r.chain_id,
  status: r.status,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  completedAt: r.completed_at,
});

const stepFromRow = (r: StepRow): StepRecord => ({
  txId: r.tx_id,
  envelopeTxId: r.envelope_tx_id,
  seq: r.seq,
  kind: r.kind,
  to: r.to_address as `0x${string}`,
  data: r.data as `0x${string}`,
  value: r.value,
  summary: JSON.parse(r.summary) as Record<string, unknown>,
  status: r.status,
  txHash: r.tx_hash,
  signedTransaction: r.signed_transaction,
  receipt: r.receipt ? (JSON.parse(r.receipt) as Record<string, unknown>) : null,
  relayedAt: r.relayed_at,
});

export class EnvelopeStore {
  constructor(private readonly db: Db) {}

  insert(e: EnvelopeRecord, steps: StepRecord[]): void {
    this.db
      .prepare(
        `INSERT INTO envelopes (tx_id, treasury_id, action, amount_micro, fee_micro, params, chain, chain_id, status, created_at, expires_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(e.txId, e.treasuryId, e.action, e.amountMicro.toString(), e.feeMicro.toString(), JSON.stringify(e.params), e.chain, e.chainId, e.status, e.createdAt, e.expiresAt, e.completedAt);
    const insertStep = this.db.prepare(
      `INSERT INTO envelope_steps (tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status, tx_hash, signed_transaction, receipt, relayed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const s of steps) {
      insertStep.run(s.txId, s.envelopeTxId, s.seq, s.kind, s.to, s.data, s.value, JSON.stringify(s.summary), s.status, s.txHash, s.signedTransaction, s.receipt ? JSON.stringify(s.receipt) : null, s.relayedAt);
    }
  }

  get(txId: string): EnvelopeRecord | undefined {
    const row = this.db.prepare("SELECT * FROM envelopes WHERE tx_id = ?").get(txId) as EnvelopeRow | undefined;
    return row ? envelopeFromRow(row) : undefined;
  }

  step(txId: string): StepRecord | undefined {
    const row = this.db.prepare("SELECT * FROM envelope_steps WHERE tx_id = ?").get(txId) as StepRow | undefined;
    return row ? stepFromRow(row) : undefined;
  }

  steps(envelopeTxId: string): StepRecord[] {
    return (this.db.prepare("SELECT * FROM envelope_steps WHERE envelope_tx_id = ? ORDER BY seq").all(envelopeTxId) as StepRow[]).map(stepFromRow);
  }

  /** the envelope of a treasury still awaiting signature and not expired at `nowIso` */
  pendingFor(treasuryId: string, nowIso: string): EnvelopeRecord | undefined {
    const row = this.db
      .prepare("SELECT * FROM envelopes WHERE treasury_id = ? AND status = 'awaiting_signature' AND expires_at > ? ORDER BY created_at DESC LIMIT 1")
      .get(treasuryId, nowIso) as EnvelopeRow | undefined;
    return row ? envelopeFromRow(row) : undefined;
  }

  /** mark a step relayed, only if it was still awaiting (returns false otherwise) */
  markStepRelayed(txId: string, txHash: string, signed: string, receipt: Record<string, unknown>, at: string): boolean {
    return (
      this.db
        .prepare("UPDATE envelope_steps SET status = 'relayed', tx_hash = ?, signed_transaction = ?, receipt = ?, relayed_at = ? WHERE tx_id = ? AND status = 'awaiting_signature'")
        .run(txHash, signed, JSON.stringify(receipt), at, txId).changes === 1
    );
  }

  setStatus(txId: string, status: EnvelopeStatus, at: string | null): void {
    this.db.prepare("UPDATE envelopes SET status = ?, completed_at = COALESCE(?, completed_at) WHERE tx_id = ?").run(status, at, txId);
  }
}
