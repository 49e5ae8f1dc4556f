/**
 * The protection engines of one automation key share its delegations by shards: a treasury belongs to shard
 * `shardOf(treasuryId, S)`, and each shard is held by one engine under a lease (SHARD_LEASE_MS) that engine
 * renews every pass with `acquire`. An engine's fair share is its quota among the live engines of its key
 * (those that beat within the lease, store/instance-store.ts): S split as evenly as it goes, the engines ranked
 * by id, so the quotas add up to exactly S and every engine can reach its own.
 *
 * One `acquire`, in one transaction, the engine's heartbeat included:
 * - gives back the shards above its quota (so a new engine finds free ones at its next pass);
 * - renews the rest of its own, fenced: only rows that still name it as holder;
 * - takes free shards up to its quota: never held, or whose lease ended. The take is a conditional write
 *   that states in SQL what "free" means, so a shard another engine renewed meanwhile is not taken.
 * A holder that lost a shard (its lease ran out and another engine took it) cannot renew it: its renewal
 * names it as holder and finds no such row. A shard is one row, so it has one holder at a time; an engine
 * holds what its last `acquire` returned until that lease ends (now + lease), and no other engine takes it
 * before, on the clocks the engines pass in (engines of one store keep their clocks within a fraction of the
 * lease).
 *
 * An engine that stops beating: its lease and its heartbeat are written together, so when it has been silent
 * for a lease both end at once: its shards are free, and it no longer counts among the live engines whose
 * number sets the quotas, so the others' quotas grow to cover them (taken within a lease and a pass: 3 s and
 * about 2 s by default). Its heartbeat alone never cuts a lease short: an engine that was only slow keeps
 * what it was told it holds until its lease ends. `release` (an engine stopping on purpose) frees its shards
 * at once and removes it from the live engines.
 *
 * Concurrency: on SQLite a transaction is the one writer (BEGIN IMMEDIATE, across processes too). On
 * PostgreSQL the acquires of one key queue on a transaction-scoped advisory lock and run READ COMMITTED, so
 * each statement sees what the previous holder of the lock committed (a SERIALIZABLE snapshot taken before
 * the wait would only fail and retry); the fenced writes hold without the lock as well.
 *
 * Every engine of a key must use the same shard count; shards at or past the engine's count are given back.
 */
import type { Db } from "./db";
import { engineRowId, InstanceStore } from "./instance-store";
import { leaseUntil } from "./lease";

/**
 * A shard's lease: a watching engine renews it every third of it, apart from its passes (protection/engine.ts),
 * so a dead engine's shards are taken within 3 s, while a pass that takes longer than a block keeps them
 */
export const SHARD_LEASE_MS = Number(process.env.SHARD_LEASE_MS ?? 3_000);

/** PostgreSQL advisory lock class of the shards (the key's hash is the second half); migrations use 4020 */
const SHARD_LOCK_CLASS = 4041;

/** the shard of a treasury among `shardCount` (FNV-1a of its id: stable across processes and releases) */
export function shardOf(treasuryId: string, shardCount: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < treasuryId.length; i++) {
    h ^= treasuryId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shardCount;
}

/** the quota of the engine ranked `rank` (0-based) among `engines` live engines: S split as evenly as it goes */
export function fairShare(shardCount: number, engines: number, rank: number): number {
  return Math.floor(shardCount / engines) + (rank < shardCount % engines ? 1 : 0);
}

export interface ShardOwner {
  automation: string;
  shard: number;
  /** the engine id holding it */
  holder: string;
  expiresAt: string;
}

const marks = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

export class EngineShardStore {
  private readonly instances: InstanceStore;

  constructor(private readonly db: Db) {
    this.instances = new InstanceStore(db);
  }

  /**
   * The engine's pass: beat, give back what is above its fair share, renew its own and take free shards up to
   * it; the shards it holds until now + leaseMs, ascending.
   */
  async acquire(engineId: string, automation: string, shardCount: number, now: Date, leaseMs = SHARD_LEASE_MS): Promise<number[]> {
    if (!Number.isInteger(shardCount) || shardCount < 1) throw new RangeError(`a shard count is a positive integer, not ${shardCount}`);
    if (!(leaseMs > 0)) throw new RangeError(`a shard lease is positive, not ${leaseMs}`);
    const key = automation.toLowerCase();
    const at = now.toISOString();
    const until = leaseUntil(now, leaseMs);
    const liveSince = new Date(now.getTime() - leaseMs).toISOString();
    return this.db.transaction(
      async () => {
        if (this.db.dialect === "postgres") await this.db.get("SELECT pg_advisory_xact_lock(?, hashtext(?)) AS locked", SHARD_LOCK_CLASS, key);
        await this.instances.beatEngine(engineId, key, now);

        // the live engines of this key, ranked by id (not the row engines of this key shared before version 15)
        const live = (
          await this.db.all<{ id: string }>(
            "SELECT id FROM instances WHERE automation = ? AND heartbeat_at > ? AND id <> ? ORDER BY id",
            key,
            liveSince,
            engineRowId(key),
          )
        ).map((r) => r.id);
        const me = engineRowId(engineId);
        if (!live.includes(me)) live.push(me); // a beat at `now` is live unless the clock went back
        const quota = fairShare(shardCount, live.length, live.indexOf(me));

        const rows = await this.db.all<{ shard: number; holder: string; expires_at: string }>(
          "SELECT shard, holder, expires_at FROM engine_shards WHERE automation = ?",
          key,
        );
        const mine = rows
          .filter((r) => r.holder === engineId)
          .map((r) => Number(r.shard))
          .sort((a, b) => a - b);
        const keep = mine.filter((s) => s < shardCount).slice(0, quota);
        const giveBack = mine.filter((s) => !keep.includes(s));
        if (giveBack.length > 0)
          await this.db.run(
            `DELETE FROM engine_shards WHERE automation = ? AND holder = ? AND shard IN (${marks(giveBack.length)})`,
            key,
            engineId,
            ...giveBack,
          );

        const held =
          keep.length === 0
            ? []
            : (
                await this.db.all<{ shard: number }>(
                  `UPDATE engine_shards SET expires_at = ? WHERE automation = ? AND holder = ? AND shard IN (${marks(keep.length)}) RETURNING shard`,
                  until,
                  key,
                  engineId,
                  ...keep,
                )
              ).map((r) => Number(r.shard));

        let room = quota - held.length;
        if (room > 0) {
          const present = new Set(rows.map((r) => Number(r.shard)));
          const absent = [...Array(shardCount).keys()].filter((s) => !present.has(s)).slice(0, room);
          if (absent.length > 0) {
            const inserted = await this.db.all<{ shard: number }>(
              `INSERT INTO engine_shards (automation, shard, holder, taken_at, expires_at) VALUES ${absent.map(() => "(?, ?, ?, ?, ?)").join(", ")} ON CONFLICT DO NOTHING RETURNING shard`,
              ...absent.flatMap((s) => [key, s, engineId, at, until]),
            );
            held.push(...inserted.map((r) => Number(r.shard)));
            room -= inserted.length;
          }
        }
        if (room > 0) {
          // lapsed leases; the write states it again (the fence): a shard renewed meanwhile is not taken
          const lapsed = rows
            .filter((r) => r.holder !== engineId && Number(r.shard) < shardCount && r.expires_at <= at)
            .map((r) => Number(r.shard))
            .sort((a, b) => a - b)
            .slice(0, room);
          if (lapsed.length > 0) {
            const taken = await this.db.all<{ shard: number }>(
              `UPDATE engine_shards SET holder = ?, taken_at = ?, expires_at = ?
                 WHERE automation = ? AND holder <> ? AND expires_at <= ? AND shard IN (${marks(lapsed.length)}) RETURNING shard`,
              engineId,
              at,
              until,
              key,
              engineId,
              at,
              ...lapsed,
            );
            held.push(...taken.map((r) => Number(r.shard)));
          }
        }
        return held.sort((a, b) => a - b);
      },
      { isolation: "read committed" },
    );
  }

  /** the engine stops: its shards are free at once, and it no longer counts among its key's live engines */
  async release(engineId: string): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run("DELETE FROM engine_shards WHERE holder = ?", engineId);
      await this.instances.forgetEngine(engineId);
    });
  }

  /** who holds which shard at `now` (leases not yet ended), by key and shard */
  async owners(now: Date): Promise<ShardOwner[]> {
    const rows = await this.db.all<{ automation: string; shard: number; holder: string; expires_at: string }>(
      "SELECT automation, shard, holder, expires_at FROM engine_shards WHERE expires_at > ? ORDER BY automation, shard",
      now.toISOString(),
    );
    return rows.map((r) => ({ automation: r.automation, shard: Number(r.shard), holder: r.holder, expiresAt: r.expires_at }));
  }
}
