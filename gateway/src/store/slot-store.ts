/**
 * The conflict slot of a treasury (spec 4.5: 409 while a conflicting
 * operation is in progress). One row per treasury, claimed atomically with the
 * conflict check, before any payment is settled, and released when the action
 * has produced its envelope or receipt (the envelope then blocks on its own).
 * It is a lease its request renews; a slot whose holder died expires (at once
 * when the holder's process is known to be gone: store/instance-store.ts).
 */
import type { Db } from "./db";
import { holderGone, leaseLapsed } from "./instance-store";
import { leaseUntil } from "./lease";

export class SlotStore {
  constructor(private readonly db: Db) {}

  /** claim the treasury's slot for `holder`; false when someone else holds it */
  async claim(treasuryId: string, holder: string, now: Date): Promise<boolean> {
    await this.dropLapsed(treasuryId, now);
    return (
      (
        await this.db.run(
          "INSERT INTO treasury_slots (treasury_id, holder, claimed_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
          treasuryId,
          holder,
          now.toISOString(),
          leaseUntil(now),
        )
      ).changes === 1
    );
  }

  /** nobody holds the treasury's slot at `now` (an expired holder, or one of a dead process, does not count) */
  async free(treasuryId: string, now: Date): Promise<boolean> {
    const row = await this.db.get<{ holder: string }>(
      "SELECT holder FROM treasury_slots WHERE treasury_id = ? AND expires_at > ?",
      treasuryId,
      now.toISOString(),
    );
    return row === undefined || (await holderGone(this.db, row.holder, now));
  }

  /** drop the treasury's slot when its lease ran out or its holder's process is gone */
  private async dropLapsed(treasuryId: string, now: Date): Promise<void> {
    const row = await this.db.get<{ holder: string; expires_at: string }>("SELECT holder, expires_at FROM treasury_slots WHERE treasury_id = ?", treasuryId);
    if (row && (await leaseLapsed(this.db, { endsAt: row.expires_at, holder: row.holder }, now))) {
      await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, row.holder);
    }
  }

  async holds(treasuryId: string, holder: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder)) !== undefined;
  }

  /** the holder is alive: extend its slots' leases */
  async renew(holder: string, now: Date): Promise<void> {
    await this.db.run("UPDATE treasury_slots SET expires_at = ? WHERE holder = ?", leaseUntil(now), holder);
  }

  async release(treasuryId: string, holder: string): Promise<void> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND holder = ?", treasuryId, holder);
  }
}
