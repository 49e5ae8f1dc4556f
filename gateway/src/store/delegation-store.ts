/** Managed-treasury delegations and the protection engine's actions and gas ledger. */
import type { Db } from "./db";

export interface DelegationRecord {
  treasuryId: string;
  safe: `0x${string}`;
  module: `0x${string}`;
  automation: `0x${string}`;
  registeredAt: string;
  firstApprovedAt: string | null;
  protectBelowHealth: number | null;
  armed: boolean;
}

interface Row {
  treasury_id: string;
  safe: string;
  module: string;
  automation: string;
  registered_at: string;
  first_approved_at: string | null;
  protect_below_health: number | null;
  armed: number;
}

const fromRow = (r: Row): DelegationRecord => ({
  treasuryId: r.treasury_id,
  safe: r.safe as `0x${string}`,
  module: r.module as `0x${string}`,
  automation: r.automation as `0x${string}`,
  registeredAt: r.registered_at,
  firstApprovedAt: r.first_approved_at,
  protectBelowHealth: r.protect_below_health,
  armed: r.armed === 1,
});

export interface ProtectionActionRecord {
  id: string;
  treasuryId: string;
  status: "executed" | "skipped" | "failed";
  reason: string | null;
  healthBefore: number | null;
  ltvBefore: number | null;
  ltvAfter: number | null;
  repayMicro: bigint | null;
  txHashes: string[];
  gasUsd: number;
  createdAt: string;
}

export class DelegationStore {
  constructor(private readonly db: Db) {}

  upsert(d: Omit<DelegationRecord, "firstApprovedAt" | "armed">): void {
    this.db
      .prepare(
        `INSERT INTO delegations (treasury_id, safe, module, automation, registered_at, protect_below_health) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(treasury_id) DO UPDATE SET module = excluded.module, automation = excluded.automation, protect_below_health = excluded.protect_below_health`,
      )
      .run(d.treasuryId, d.safe, d.module, d.automation, d.registeredAt, d.protectBelowHealth);
  }

  get(treasuryId: string): DelegationRecord | undefined {
    const row = this.db.prepare("SELECT * FROM delegations WHERE treasury_id = ?").get(treasuryId) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  all(): DelegationRecord[] {
    return (this.db.prepare("SELECT * FROM delegations ORDER BY registered_at").all() as Row[]).map(fromRow);
  }

  markApproved(treasuryId: string, at: string): void {
    this.db.prepare("UPDATE delegations SET first_approved_at = COALESCE(first_approved_at, ?) WHERE treasury_id = ?").run(at, treasuryId);
  }

  setArmed(treasuryId: string, armed: boolean): void {
    this.db.prepare("UPDATE delegations SET armed = ? WHERE treasury_id = ?").run(armed ? 1 : 0, treasuryId);
  }

  recordAction(a: ProtectionActionRecord): void {
    this.db
      .prepare(
        `INSERT INTO protection_actions (id, treasury_id, status, reason, health_before, ltv_before, ltv_after, repay_micro, tx_hashes, gas_usd, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(a.id, a.treasuryId, a.status, a.reason, a.healthBefore, a.ltvBefore, a.ltvAfter, a.repayMicro?.toString() ?? null, JSON.stringify(a.txHashes), a.gasUsd, a.createdAt);
  }

  actions(treasuryId: string): ProtectionActionRecord[] {
    return (
      this.db.prepare("SELECT * FROM protection_actions WHERE treasury_id = ? ORDER BY created_at, rowid").all(treasuryId) as {
        id: string;
        treasury_id: string;
        status: ProtectionActionRecord["status"];
        reason: string | null;
        health_before: number | null;
        ltv_before: number | null;
        ltv_after: number | null;
        repay_micro: string | null;
        tx_hashes: string;
        gas_usd: number;
        created_at: string;
      }[]
    ).map((r) => ({
      id: r.id,
      treasuryId: r.treasury_id,
      status: r.status,
      reason: r.reason,
      healthBefore: r.health_before,
      ltvBefore: r.ltv_before,
      ltvAfter: r.ltv_after,
      repayMicro: r.repay_micro === null ? null : BigInt(r.repay_micro),
      txHashes: JSON.parse(r.tx_hashes) as string[],
      gasUsd: r.gas_usd,
      createdAt: r.created_at,
    }));
  }

  /** protection gas spent by a treasury in the calendar month (UTC) of `at` */
  monthGasUsd(treasuryId: string, at: Date): number {
    const month = at.toISOString().slice(0, 7);
    const row = this.db
      .prepare("SELECT COALESCE(SUM(gas_usd), 0) AS total FROM protection_actions WHERE treasury_id = ? AND status = 'executed' AND substr(created_at, 1, 7) = ?")
      .get(treasuryId, month) as { total: number };
    return row.total;
  }
}
