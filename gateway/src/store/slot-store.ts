/**
 * The conflict slot of a treasury (spec 4.5: 409 while a conflicting
 * operation is in progress). One row per treasury, claimed atomically with the
 * conflict check, before any payment is settled, and released when the action
 * has produced its envelope or receipt (the envelope then blocks on its own).
 * A slot whose holder died expires.
 */
import type { Db } from "./db";

export const SLOT_TTL_MS = 120_000;

export class SlotStore {
  constructor(private readonly db: Db) {}

  /** claim the treasury's slot for `holder`; false when someone else holds it */
  claim(treasuryId: string, holder: string, now: Date): boolean {
    this.db.prepare("DELETE FROM treasury_slots WHERE treasury_id = ? AND expires_at <= ?").run(treasuryId, now.toISOString());
    return (
      this.db
        .prepare("INSERT OR IGNORE INTO treasury_slots (treasury_id, holder, claimed_at, expires_at) VALUES (?, ?, ?, ?)")
        .run(treasuryId, holder, now.toISOString(), new Date(now.getTime() + SLOT_TTL_MS).toISOString()).changes === 1
    );
  }

  holds(treasuryId: string, holder: string): boolean {
    return this.db.prepare("SELECT 1 FROM treasury_slots WHERE treasury_id = ? AND holder = ?").get(treasuryId, holder) !== undefined;
  }

  release(treasuryId: string, holder: string): void {
    this.db.prepare("DELETE FROM treasury_slots WHERE treasury_id = ? AND holder = ?").run(treasuryId, holder);
  }
}
