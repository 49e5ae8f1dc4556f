/** Managed-treasury delegations and the protection engine's actions and gas ledger. */
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { delegations, protectionActions } from "./schema/tables/protection";

export interface DelegationRecord {
  treasuryId: string;
  safe: `0x${string}`;
  module: `0x${string}`;
  automation: `0x${string}`;
  registeredAt: string;
  firstApprovedAt: string | null;
  protectBelowHealth: number | null;
  armed: boolean;
  chain: TreasuryChain | null;
  /** when the Safe's own signature (EIP-1271) attached it; the engine acts only on proven delegations */
  provenAt: string | null;
  /** a newer module the Safe signed for while this one is enabled: it replaces `module` once the Safe enables it */
  pendingUpgrade: PendingUpgrade | null;
}

export interface PendingUpgrade {
  module: `0x${string}`;
  automation: `0x${string}`;
  protectBelowHealth: number;
  proof: Record<string, unknown>;
  at: string;
}

const fromRow: (raw: unknown) => DelegationRecord = rowReader(delegations, { omit: ["proof"] });

export interface ProtectionActionRecord {
  id: string;
  treasuryId: string;
  safe: string;
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

const readAction = rowReader(protectionActions);
/** nullable columns an action read by its Safe always has: its `safe` (the query's), its `tx_hashes` (recordAction writes them) */
const actionOf = (raw: unknown): ProtectionActionRecord => {
  const a = readAction(raw);
  return { ...a, safe: a.safe as string, txHashes: a.txHashes as string[] };
};

export class DelegationStore {
  constructor(private readonly db: Db) {}

  /**
   * Attach a delegation proven by the Safe's signature. One Safe has at most
   * one delegation: a proven one held by another treasury is detached (the
   * Safe's owners chose this treasury). Call inside the caller's transaction.
   */
  async attachProven(d: {
    treasuryId: string;
    chain: string;
    safe: string;
    module: string;
    automation: string;
    protectBelowHealth: number;
    proof: Record<string, unknown>;
    at: string;
  }): Promise<void> {
    await this.db.run("DELETE FROM delegations WHERE chain = ? AND lower(safe) = lower(?) AND treasury_id != ?", d.chain, d.safe, d.treasuryId);
    await this.db.run(
      `INSERT INTO delegations (treasury_id, safe, module, automation, registered_at, protect_below_health, chain, proof, proven_at, armed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT(treasury_id) DO UPDATE SET safe = excluded.safe, module = excluded.module, automation = excluded.automation, protect_below_health = excluded.protect_below_health,
           chain = excluded.chain, proof = excluded.proof, proven_at = excluded.proven_at, armed = 1, pending_upgrade = NULL`,
      d.treasuryId,
      d.safe,
      d.module,
      d.automation,
      d.at,
      d.protectBelowHealth,
      d.chain,
      JSON.stringify(d.proof),
      d.at,
    );
  }

  /** stage a newer module the Safe signed for; the current one stays in force until the Safe enables the new one */
  async stageUpgrade(treasuryId: string, u: PendingUpgrade): Promise<void> {
    await this.db.run("UPDATE delegations SET pending_upgrade = ? WHERE treasury_id = ?", JSON.stringify(u), treasuryId);
  }

  /** the Safe enabled the staged module: it becomes the delegation's module (false when nothing, or another, was staged) */
  async promoteUpgrade(treasuryId: string, module: string): Promise<boolean> {
    const d = await this.get(treasuryId);
    const u = d?.pendingUpgrade;
    if (!u || u.module.toLowerCase() !== module.toLowerCase()) return false;
    const r = await this.db.run(
      "UPDATE delegations SET module = ?, automation = ?, protect_below_health = ?, proof = ?, proven_at = ?, pending_upgrade = NULL, armed = 1 WHERE treasury_id = ? AND pending_upgrade = ?",
      u.module,
      u.automation,
      u.protectBelowHealth,
      JSON.stringify(u.proof),
      u.at,
      treasuryId,
      JSON.stringify(u),
    );
    return r.changes === 1;
  }

  async get(treasuryId: string): Promise<DelegationRecord | undefined> {
    const row = await this.db.get("SELECT * FROM delegations WHERE treasury_id = ?", treasuryId);
    return row ? fromRow(row) : undefined;
  }

  /** the delegations the engine may act on: attached with the Safe's own proof */
  async allProven(): Promise<DelegationRecord[]> {
    return (await this.db.all("SELECT * FROM delegations WHERE proven_at IS NOT NULL ORDER BY registered_at")).map(fromRow);
  }

  async markApproved(treasuryId: string, at: string): Promise<void> {
    await this.db.run("UPDATE delegations SET first_approved_at = COALESCE(first_approved_at, ?) WHERE treasury_id = ?", at, treasuryId);
  }

  async setArmed(treasuryId: string, armed: boolean): Promise<void> {
    await this.db.run("UPDATE delegations SET armed = ? WHERE treasury_id = ?", armed ? 1 : 0, treasuryId);
  }

  async recordAction(a: ProtectionActionRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO protection_actions (id, treasury_id, safe, status, reason, health_before, ltv_before, ltv_after, repay_micro, tx_hashes, gas_usd, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      a.id,
      a.treasuryId,
      a.safe,
      a.status,
      a.reason,
      a.healthBefore,
      a.ltvBefore,
      a.ltvAfter,
      a.repayMicro?.toString() ?? null,
      JSON.stringify(a.txHashes),
      a.gasUsd,
      a.createdAt,
    );
  }

  /** every protection action taken on a Safe, whichever treasury held its delegation then */
  async actionsOnSafe(safe: string): Promise<ProtectionActionRecord[]> {
    return (await this.db.all("SELECT * FROM protection_actions WHERE lower(safe) = lower(?) ORDER BY created_at, rowid", safe)).map(actionOf);
  }

  /** protection gas spent on a Safe in the calendar month (UTC) of `at` (failed attempts cost gas too) */
  async monthGasUsd(safe: string, at: Date): Promise<number> {
    const month = at.toISOString().slice(0, 7);
    const row = (await this.db.get(
      "SELECT COALESCE(SUM(gas_usd), 0) AS total FROM protection_actions WHERE lower(safe) = lower(?) AND status IN ('executed','failed') AND substr(created_at, 1, 7) = ?",
      safe,
      month,
    )) as { total: number };
    return row.total;
  }
}
