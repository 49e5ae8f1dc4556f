/**
 * The gateway processes that share a store, each with its heartbeat: a row per
 * instance (lease.ts: INSTANCE_ID, one per process), written every
 * HEARTBEAT_MS while a gateway of that process runs on the store. A claim whose holder's instance has not
 * beaten for INSTANCE_GONE_AFTER_MS belongs to a dead process: the stores that
 * hold leases (idempotency keys, x402 payments, treasury slots) take it over at
 * once instead of waiting for the lease. Exactly once still holds: the
 * takeover is the same fenced write as an expired lease's, and a process that
 * was only slow finds its lease taken when it next writes.
 */
import type { Db } from "./db";
import { instanceOf } from "./lease";

export const HEARTBEAT_MS = Number(process.env.INSTANCE_HEARTBEAT_MS ?? 1_000);
export const INSTANCE_GONE_AFTER_MS = Number(process.env.INSTANCE_GONE_AFTER_MS ?? 5_000);

/**
 * A protection engine beats too, once a pass, in a row of its own (`engine:<engine id>`) that names the
 * automation key it holds: the gateway says a treasury's automatic repayment is active only while an engine
 * holding its delegation's key has beaten this recently (passes follow the blocks, about 2 s apart; a window of
 * several covers a slow pass or a restart by its supervisor). The engines of one key share its delegations by
 * shards (store/engine-shard-store.ts), counting as live the engines that beat within the shards' lease.
 */
export const ENGINE_WATCH_WINDOW_MS = 30_000;
/** an engine's row: this prefix, then the engine's own name (as on the claims and shards it holds) */
export const ENGINE_ROW_PREFIX = "engine:";
export const engineRowId = (engineId: string): string => `${ENGINE_ROW_PREFIX}${engineId}`;

/** an instance's rows are kept a day after its last beat */
export const INSTANCE_RETENTION_MS = 86_400_000;

export class InstanceStore {
  constructor(private readonly db: Db) {}

  async beat(id: string, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.db.run(
      "INSERT INTO instances (id, started_at, heartbeat_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
      id,
      at,
      at,
    );
  }

  /** a protection engine's pass, under the automation key it holds */
  async beatEngine(engineId: string, automation: string, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.db.run(
      "INSERT INTO instances (id, started_at, heartbeat_at, automation) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, automation = excluded.automation",
      engineRowId(engineId),
      at,
      at,
      automation.toLowerCase(),
    );
  }

  /** has any engine holding this automation key taken a pass within ENGINE_WATCH_WINDOW_MS? */
  async engineWatching(automation: string, now: Date): Promise<boolean> {
    const row = await this.db.get(
      "SELECT 1 AS one FROM instances WHERE automation = ? AND heartbeat_at >= ? LIMIT 1",
      automation.toLowerCase(),
      new Date(now.getTime() - ENGINE_WATCH_WINDOW_MS).toISOString(),
    );
    return row !== undefined;
  }

  /** the engine stopped on purpose: it no longer counts as watching, nor as live among its key's engines */
  async forgetEngine(engineId: string): Promise<void> {
    await this.db.run("DELETE FROM instances WHERE id = ?", engineRowId(engineId));
  }

  /** forget instances gone for a day (their claims were taken over or expired long ago) */
  async purgeBefore(cutoff: Date): Promise<number> {
    return (await this.db.run("DELETE FROM instances WHERE heartbeat_at < ?", cutoff.toISOString())).changes;
  }
}

/** is the holder's instance known to be gone (it stopped heartbeating)? A holder of no known instance is not */
export async function holderGone(db: Db, holder: string | null | undefined, now: Date): Promise<boolean> {
  const id = instanceOf(holder);
  if (!id) return false;
  const row = await db.get<{ heartbeat_at: string }>("SELECT heartbeat_at FROM instances WHERE id = ?", id);
  return row !== undefined && row.heartbeat_at < new Date(now.getTime() - INSTANCE_GONE_AFTER_MS).toISOString();
}

/** a lease ends when its time is up or its holder's process is gone */
export async function leaseLapsed(db: Db, lease: { endsAt: string | null; holder: string | null }, now: Date): Promise<boolean> {
  if (lease.endsAt === null || lease.endsAt <= now.toISOString()) return true;
  return holderGone(db, lease.holder, now);
}
