/**
 * Idempotency keys (spec 8): one row per (credential scope, key). The first
 * request claims the key (in_progress) in one atomic INSERT; the response is
 * stored as sent, byte for byte; rows are kept at least 24 hours.
 */
import type { Db } from "./db";

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Claim =
  | { kind: "claimed" }
  | { kind: "replay"; response: StoredResponse }
  | { kind: "in_progress" }
  | { kind: "mismatch" };

export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

export class IdempotencyStore {
  constructor(private readonly db: Db) {}

  claim(scope: string, key: string, requestHash: string, now: Date): Claim {
    const nowIso = now.toISOString();
    return this.db.transaction((): Claim => {
      this.db.prepare("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND expires_at <= ?").run(scope, key, nowIso);
      const inserted = this.db
        .prepare("INSERT OR IGNORE INTO idempotency_keys (scope, key, request_hash, state, created_at, expires_at) VALUES (?, ?, ?, 'in_progress', ?, ?)")
        .run(scope, key, requestHash, nowIso, new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS).toISOString());
      if (inserted.changes === 1) return { kind: "claimed" };
      const row = this.db.prepare("SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?").get(scope, key) as {
        request_hash: string;
        state: string;
        status_code: number | null;
        headers: string | null;
        body: string | null;
      };
      if (row.request_hash !== requestHash) return { kind: "mismatch" };
      if (row.state === "in_progress") return { kind: "in_progress" };
      return { kind: "replay", response: { status: row.status_code!, headers: JSON.parse(row.headers ?? "{}"), body: row.body ?? "" } };
    })();
  }

  complete(scope: string, key: string, response: StoredResponse): void {
    this.db
      .prepare("UPDATE idempotency_keys SET state = 'completed', status_code = ?, headers = ?, body = ? WHERE scope = ? AND key = ?")
      .run(response.status, JSON.stringify(response.headers), response.body, scope, key);
  }

  /** forget a claim whose request failed unexpectedly, so it can be retried */
  release(scope: string, key: string): void {
    this.db.prepare("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = 'in_progress'").run(scope, key);
  }

  /**
   * A payment was settled for this key but its request did not execute (a
   * typed refusal after settlement, an unexpected failure): remember it, so
   * the retry of the same request with the same key is not charged again.
   */
  addPrepaid(scope: string, key: string, requestHash: string, payment: { payer: string; nonce: string }, now: Date): void {
    this.db
      .prepare("INSERT OR REPLACE INTO prepaid_requests (scope, key, request_hash, payer, nonce, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(scope, key, requestHash, payment.payer.toLowerCase(), payment.nonce.toLowerCase(), now.toISOString());
  }

  /** consume the prepaid credit of this key and request, if there is one (atomic: one taker) */
  takePrepaid(scope: string, key: string, requestHash: string): { payer: string; nonce: string } | undefined {
    const row = this.db.prepare("DELETE FROM prepaid_requests WHERE scope = ? AND key = ? AND request_hash = ? RETURNING payer, nonce").get(scope, key, requestHash) as
      | { payer: string; nonce: string }
      | undefined;
    return row;
  }

  purgeExpired(now: Date): number {
    return this.db.prepare("DELETE FROM idempotency_keys WHERE expires_at <= ?").run(now.toISOString()).changes;
  }
}
