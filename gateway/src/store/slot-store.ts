/**
 * The conflict slot of a treasury (spec 4.5: 409 while a conflicting
 * operation is in progress). One row per treasury, claimed atomically with the
 * conflict check, before any payment is settled, and released when the action
 * has produced its envelope or receipt (the envelope then blocks on its own).
 * It is a lease its request renews; a slot whose holder died expires.
 */
import type { Db } from "./db";
import { leaseUntil } from "./lease";

export class SlotStore {
  constructor(private readonly db: Db) {}

  /** claim the treasury's slot for `holder`; false when someone else holds it */
  async claim(treasuryId: string, holder: string, now: Date): Promise<boolean> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND expires_at <= ?", treasuryId, now.toISOString());
    return (
      (
        await this.db.run(
          "INSERT INTO treasury_slots (treasury_id, holder, claimed_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
          treasuryId, holder, now.toISOString(), leaseUntil(now),
        )
      ).changes === 1
    );
  }

  /** nobody holds the treasury's slot at `now` (an expired holder does not count) */
  async free(treasuryId: string, now: Date): Promise<boolean> {
    return (await this.db.get("SELECT 1 FROM treasury_slots WHERE treasury_id = ? AND expires_at > ?", treasuryId, now.toISOString())) === undefined;
  }

  async holds(treasuryId: string, holder: string): Promise<boolean> {
    return await this.db.get("SELECT 1 FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder) !== undefined;
  }

  /** the holder is alive: extend its slots' leases */
  async renew(holder: string, now: Date): Promise<void> {
    await this.db.run("UPDATE treasury_slots SET expires_at = ? WHERE holder = ?", leaseUntil(now), holder);
  }

  async release(treasuryId: string, holder: string): Promise<void> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder);
  }
}
