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
  async claim(treasuryId: string, holder: string, now: Date): Promise<boolean> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND expires_at <= ?", treasuryId, now.toISOString());
    return (
      (
        await this.db.run(
          "INSERT INTO treasury_slots (treasury_id, holder, claimed_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
          treasuryId, holder, now.toISOString(), new Date(now.getTime() + SLOT_TTL_MS).toISOString(),
        )
      ).changes === 1
    );
  }

  async holds(treasuryId: string, holder: string): Promise<boolean> {
    return await this.db.get("SELECT 1 FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder) !== undefined;
  }

  async release(treasuryId: string, holder: string): Promise<void> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder);
  }
}
