/** Executed actions (managed receipts and relayed envelopes). */
import type { Micro } from "@treasury/core/domain/money";
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { executions } from "./schema/tables/actions";

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

const receiptOf = rowReader(executions, { pick: ["receipt"] });

export class ExecutionStore {
  constructor(private readonly db: Db) {}

  async insert(e: ExecutionRecord): Promise<void> {
    await this.db.run(
      "INSERT INTO executions (id, treasury_id, action, amount_micro, fee_micro, origin, envelope_tx_id, receipt, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      e.id,
      e.treasuryId,
      e.action,
      e.amountMicro.toString(),
      e.feeMicro.toString(),
      e.origin,
      e.envelopeTxId,
      JSON.stringify(e.receipt),
      e.createdAt,
    );
  }

  /** the receipt of one of a treasury's executions (another treasury's is not found) */
  async receipt(treasuryId: string, id: string): Promise<Record<string, unknown> | undefined> {
    const row = await this.db.get("SELECT receipt FROM executions WHERE id = ? AND treasury_id = ?", id, treasuryId);
    return row ? receiptOf(row).receipt : undefined;
  }

  /** the receipt of an execution that completed later (a Safe transaction executed or failed) */
  async updateReceipt(id: string, receipt: Record<string, unknown>): Promise<void> {
    await this.db.run("UPDATE executions SET receipt = ? WHERE id = ?", JSON.stringify(receipt), id);
  }

  async count(treasuryId: string): Promise<number> {
    return ((await this.db.get("SELECT COUNT(*) AS n FROM executions WHERE treasury_id = ?", treasuryId)) as { n: number }).n;
  }
}
