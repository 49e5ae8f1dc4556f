/**
 * The protection engine's claim on one trigger of one treasury (issue 11:
 * two engines at once never act twice; a crash leaves a record the chain can
 * settle). A claim is taken in the same transaction that reads and clears the
 * delegation's `armed` flag, so of two engines one acts and the other sees it
 * held. Every transaction the engine signs is written here (hash and raw
 * bytes) before it is sent: an engine that takes over an expired claim
 * re-sends those exact bytes and reads their receipts, never signs a second
 * repayment for the same trigger blind. It is a lease its engine renews.
 */
import type { Hex } from "viem";
import type { Db } from "./db";
import { leaseUntil } from "./lease";
import { rowReader, type RowOf } from "./schema/table";
import { protectionClaims } from "./schema/tables/protection";

export interface SentTransaction {
  hash: Hex;
  raw: Hex;
  nonce: number;
  /** which call of the plan: the approval, the repayment from idle USDC, or the deleverage from collateral (one transaction) */
  call: "approve" | "repay" | "deleverage";
}

export interface ProtectionClaim {
  treasuryId: string;
  holder: string;
  actionId: string;
  state: "deciding" | "broadcasting";
  repayMicro: bigint | null;
  healthBefore: number | null;
  ltvBefore: number | null;
  sent: SentTransaction[];
  /** what the plan says of itself (a deleverage: what it sells; partial when the park target is out of one act's reach) */
  plan?: { source: "usdc" | "ausdc" | "collateral"; partial: boolean; note: string };
}

/** a claim as the pass reads them all, with the end of its holder's lease */
export type OpenClaim = ProtectionClaim & { expiresAt: string };

export type ClaimResult =
  /** this engine acts on the trigger */
  | { kind: "claimed"; claim: ProtectionClaim }
  /** a dead engine's claim, now this engine's: reconcile what it sent first */
  | { kind: "taken_over"; claim: ProtectionClaim }
  /** a live engine is acting on it */
  | { kind: "held" }
  /** the trigger was already acted on (disarmed until the position recovers) */
  | { kind: "disarmed" };

interface Detail {
  healthBefore: number | null;
  ltvBefore: number | null;
  sent: SentTransaction[];
  plan?: ProtectionClaim["plan"];
}

const read = rowReader(protectionClaims);

/** the claim's own columns, and what its `detail` document holds */
const fromRow = (r: RowOf<typeof protectionClaims>): ProtectionClaim => {
  const d = (r.detail ?? { healthBefore: null, ltvBefore: null, sent: [] }) as Detail;
  return {
    treasuryId: r.treasuryId,
    holder: r.holder,
    actionId: r.actionId,
    state: r.state,
    repayMicro: r.repayMicro,
    healthBefore: d.healthBefore,
    ltvBefore: d.ltvBefore,
    sent: d.sent,
    ...(d.plan ? { plan: d.plan } : {}),
  };
};

export class ProtectionClaimStore {
  constructor(private readonly db: Db) {}

  /** claim the treasury's current trigger for `holder` (see ClaimResult) */
  async claim(treasuryId: string, holder: string, actionId: string, now: Date): Promise<ClaimResult> {
    return this.db.transaction(async () => {
      const raw = await this.db.get("SELECT * FROM protection_claims WHERE treasury_id = ?", treasuryId);
      const row = raw ? read(raw) : undefined;
      // its own claim (a pass that gave up waiting on a receipt) the same engine resumes at once
      if (row && row.holder !== holder && row.expiresAt > now.toISOString()) return { kind: "held" } as const;
      if (row) {
        await this.db.run(
          "UPDATE protection_claims SET holder = ?, claimed_at = ?, expires_at = ? WHERE treasury_id = ? AND holder = ?",
          holder,
          now.toISOString(),
          leaseUntil(now),
          treasuryId,
          row.holder,
        );
        return { kind: "taken_over", claim: { ...fromRow(row), holder } } as const;
      }
      const armed = await this.db.get<{ armed: number }>("SELECT armed FROM delegations WHERE treasury_id = ?", treasuryId);
      if (armed?.armed !== 1) return { kind: "disarmed" } as const;
      await this.db.run("UPDATE delegations SET armed = 0 WHERE treasury_id = ?", treasuryId);
      await this.db.run(
        "INSERT INTO protection_claims (treasury_id, holder, state, action_id, claimed_at, expires_at) VALUES (?, ?, 'deciding', ?, ?, ?)",
        treasuryId,
        holder,
        actionId,
        now.toISOString(),
        leaseUntil(now),
      );
      return {
        kind: "claimed",
        claim: { treasuryId, holder, actionId, state: "deciding", repayMicro: null, healthBefore: null, ltvBefore: null, sent: [] },
      } as const;
    });
  }

  /**
   * Write the claim's plan and the transactions signed so far, before the last
   * one is sent; false when `holder` no longer holds it (it must not send).
   */
  async record(claim: ProtectionClaim, now: Date): Promise<boolean> {
    const detail: Detail = { healthBefore: claim.healthBefore, ltvBefore: claim.ltvBefore, sent: claim.sent, ...(claim.plan ? { plan: claim.plan } : {}) };
    const r = await this.db.run(
      "UPDATE protection_claims SET state = ?, repay_micro = ?, detail = ?, tx_hash = ?, expires_at = ? WHERE treasury_id = ? AND holder = ?",
      claim.sent.length > 0 ? "broadcasting" : "deciding",
      claim.repayMicro?.toString() ?? null,
      JSON.stringify(detail),
      claim.sent.at(-1)?.hash ?? null,
      leaseUntil(now),
      claim.treasuryId,
      claim.holder,
    );
    return r.changes === 1;
  }

  /** the holder is alive: extend its lease; false when it lost the claim */
  async renew(treasuryId: string, holder: string, now: Date): Promise<boolean> {
    return (
      (await this.db.run("UPDATE protection_claims SET expires_at = ? WHERE treasury_id = ? AND holder = ?", leaseUntil(now), treasuryId, holder)).changes === 1
    );
  }

  /** the trigger is settled (its action recorded in the same transaction by the caller): drop the claim */
  async finish(treasuryId: string, holder: string): Promise<boolean> {
    return (await this.db.run("DELETE FROM protection_claims WHERE treasury_id = ? AND holder = ?", treasuryId, holder)).changes === 1;
  }

  /** every open claim (a finished one is deleted), in one query: the pass's view of the triggers in hand */
  async allOpen(): Promise<OpenClaim[]> {
    return (await this.db.all("SELECT * FROM protection_claims ORDER BY treasury_id")).map((raw) => {
      const row = read(raw);
      return { ...fromRow(row), expiresAt: row.expiresAt };
    });
  }

  async get(treasuryId: string): Promise<ProtectionClaim | undefined> {
    const row = await this.db.get("SELECT * FROM protection_claims WHERE treasury_id = ?", treasuryId);
    return row ? fromRow(read(row)) : undefined;
  }
}
