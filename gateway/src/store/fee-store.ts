/**
 * The fee audit trail (rule 5) and the fee ratchet (rule 6), written together
 * in one transaction so the platform volume and the audit can never disagree.
 */
import { advanceRatchet, tierAt, type RatchetState } from "@treasury/core/domain/fee-schedule";
import type { Action } from "@treasury/core/actions";
import type { Micro } from "@treasury/core/domain/money";
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { feeAudit, feeRatchet } from "./schema/tables/treasury";

/** where a page of the audit trail ends: an entry's time and insertion number */
export interface AuditPosition {
  createdAt: string;
  position: number;
}

export interface FeeAuditEntry {
  id: string;
  treasuryId: string;
  action: Action;
  amountMicro: Micro;
  feeMicro: Micro;
  feeBps: number;
  feeBasis: string;
  feeTier: string;
  trigger: string;
  executionRef: string;
  createdAt: string;
  /** sandbox (simulated, or on a test chain with sandbox funds) or live */
  environment: "sandbox" | "live";
  /** a live, settled, fee-bearing execution: its amount moved the platform volume */
  countsTowardVolume: boolean;
}

const fromRow: (raw: unknown) => FeeAuditEntry = rowReader(feeAudit);
const ratchetOf: (raw: unknown) => RatchetState = rowReader(feeRatchet, { pick: ["tier_index", "platform_volume_micro"] });

export class FeeStore {
  constructor(private readonly db: Db) {}

  async ratchet(): Promise<RatchetState> {
    return ratchetOf(await this.db.get("SELECT tier_index, platform_volume_micro FROM fee_ratchet WHERE id = 1"));
  }

  /**
   * Record one execution. Only live, settled, fee-bearing executions
   * (countsTowardVolume) advance the ratchet by their amount; sandbox ones are
   * audited and count for nothing. Call inside the caller's transaction, so
   * the execution and its audit land together or not at all.
   */
  async record(entry: Omit<FeeAuditEntry, "feeTier">): Promise<FeeAuditEntry> {
    const state = await this.ratchet();
    const full: FeeAuditEntry = { ...entry, feeTier: tierAt(state.tierIndex).tier };
    await this.db.run(
      `INSERT INTO fee_audit (id, treasury_id, action, amount_micro, fee_micro, fee_bps, fee_basis, fee_tier, trigger, execution_ref, created_at, environment, counts_toward_volume)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      full.id,
      full.treasuryId,
      full.action,
      full.amountMicro.toString(),
      full.feeMicro.toString(),
      full.feeBps,
      full.feeBasis,
      full.feeTier,
      full.trigger,
      full.executionRef,
      full.createdAt,
      full.environment,
      full.countsTowardVolume && full.feeMicro > 0n ? 1 : 0,
    );
    if (full.countsTowardVolume && full.feeMicro > 0n) {
      const next = advanceRatchet(state, full.amountMicro);
      await this.db.run(
        "UPDATE fee_ratchet SET tier_index = ?, platform_volume_micro = ?, updated_at = ? WHERE id = 1",
        next.tierIndex,
        next.platformVolumeMicro.toString(),
        full.createdAt,
      );
    }
    return full;
  }

  /** the whole trail of a treasury (checks and tools; the API serves it a page at a time) */
  async forTreasury(treasuryId: string): Promise<FeeAuditEntry[]> {
    return (await this.db.all("SELECT * FROM fee_audit WHERE treasury_id = ? ORDER BY created_at, rowid", treasuryId)).map(fromRow);
  }

  /**
   * A page of a treasury's audit trail in the order it was written: at most `limit` entries after the
   * `after` position (an entry's time and insertion number), one index range scan whatever the trail's
   * length; `next` is the position to continue from when more follow.
   */
  async pageForTreasury(treasuryId: string, limit: number, after?: AuditPosition): Promise<{ entries: FeeAuditEntry[]; next?: AuditPosition }> {
    const rows = (
      after
        ? await this.db.all(
            "SELECT *, rowid AS position FROM fee_audit WHERE treasury_id = ? AND (created_at > ? OR (created_at = ? AND rowid > ?)) ORDER BY created_at, rowid LIMIT ?",
            treasuryId,
            after.createdAt,
            after.createdAt,
            after.position,
            limit + 1,
          )
        : await this.db.all("SELECT *, rowid AS position FROM fee_audit WHERE treasury_id = ? ORDER BY created_at, rowid LIMIT ?", treasuryId, limit + 1)
    ) as { created_at: string; position: number | string }[];
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { entries: page.map(fromRow), next: rows.length > limit && last ? { createdAt: last.created_at, position: Number(last.position) } : undefined };
  }

  /**
   * Time of the last fee-bearing execution of a treasury (deposit, convert or
   * borrow: every one of them buys or borrows), the dormancy clock's input.
   */
  async lastFeeBearingAt(treasuryId: string): Promise<string | undefined> {
    const row = (await this.db.get("SELECT MAX(created_at) AS at FROM fee_audit WHERE treasury_id = ? AND fee_micro != '0'", treasuryId)) as {
      at: string | null;
    };
    return row.at ?? undefined;
  }
}
