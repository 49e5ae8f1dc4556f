/**
 * Rate-limit windows in the shared store: a fixed window per key, counted in
 * one atomic upsert, so every instance counts the same hits once.
 */
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { rateLimitHits } from "./schema/tables/actions";

const windowOf = rowReader(rateLimitHits, { pick: ["hits", "reset_at"] });

export class RateLimitStore {
  constructor(private readonly db: Db) {}

  /** count `by` hits of `key` (default one); a window that ended starts again at `by` */
  async hit(key: string, windowMs: number, nowMs: number, by = 1): Promise<{ hits: number; resetAt: number }> {
    const row = await this.db.get(
      `INSERT INTO rate_limit_hits (key, hits, reset_at) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN rate_limit_hits.reset_at <= ? THEN excluded.hits ELSE rate_limit_hits.hits + excluded.hits END,
         reset_at = CASE WHEN rate_limit_hits.reset_at <= ? THEN excluded.reset_at ELSE rate_limit_hits.reset_at END
       RETURNING hits, reset_at`,
      key,
      by,
      nowMs + windowMs,
      nowMs,
      nowMs,
    );
    return windowOf(row);
  }

  async purgeExpired(nowMs: number): Promise<number> {
    return (await this.db.run("DELETE FROM rate_limit_hits WHERE reset_at <= ?", nowMs)).changes;
  }
}
