/** Executed actions (managed receipts and relayed envelopes). */
import type { Micro } from "../domain/money";
import type { Db } from "./db";

export interface ExecutionRecord {
  id: string;
  treasuryId: string;
  action: string;
  amountMicro: Micro;
  feeMicro: Micro;
  origin: "managed" | "relay";
  envelopeTxId: string | null;
  receipt: Record<string, unknown>;
  createdAt: string;
}

export class ExecutionStore {
  constructor(private readonly db: Db) {}

  insert(e: ExecutionRecord): void {
    this.db
      .prepare("INSERT INTO executions (id, treasury_id, action, amount_micro, fee_micro, origin, envelope_tx_id, receipt, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .run(e.id, e.treasuryId, e.action, e.amountMicro.toString(), e.feeMicro.toString(), e.origin, e.envelopeTxId, JSON.stringify(e.receipt), e.createdAt);
  }

  count(treasuryId: string): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM executions WHERE treasury_id = ?").get(treasuryId) as { n: number }).n;
  }
}
