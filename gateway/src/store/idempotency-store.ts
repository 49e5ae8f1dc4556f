/**
 * Idempotency keys (spec 8): one row per (credential scope, key). The first
 * request claims the key (in_progress) in one atomic INSERT, under a lease it
 * renews while it runs; a request that died leaves a lease that expires, and
 * the next request with the same key and body takes the claim over (at once
 * when the holder's process is known to be gone: store/instance-store.ts). The
 * response is stored as sent, byte for byte; rows are kept at least 24 hours.
 */
import type { Db } from "./db";
import { leaseLapsed } from "./instance-store";
import { leaseUntil } from "./lease";
import { rowReader } from "./schema/table";
import { idempotencyKeys } from "./schema/tables/actions";

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Claim =
  { kind: "claimed"; holder: string; reclaimed: boolean } | { kind: "replay"; response: StoredResponse } | { kind: "in_progress" } | { kind: "mismatch" };

export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

const readKey = rowReader(idempotencyKeys);
const readResponse = rowReader(idempotencyKeys, { pick: ["status_code", "headers", "body"] });
/** a completed key's response, as it was sent */
const responseOf = (r: ReturnType<typeof readResponse>): StoredResponse => ({ status: r.statusCode!, headers: r.headers ?? {}, body: r.body ?? "" });

export class IdempotencyStore {
  constructor(private readonly db: Db) {}

  claim(scope: string, key: string, requestHash: string, now: Date, holder: string): Promise<Claim> {
    const nowIso = now.toISOString();
    const insert = () =>
      this.db.run(
        "INSERT INTO idempotency_keys (scope, key, request_hash, state, created_at, expires_at, lease_holder, lease_expires_at) VALUES (?, ?, ?, 'in_progress', ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        scope,
        key,
        requestHash,
        nowIso,
        new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS).toISOString(),
        holder,
        leaseUntil(now),
      );
    return this.db.transaction(async (): Promise<Claim> => {
      // a fresh key (nearly every call) is one statement; an expired record of the key is removed only when it is there
      if ((await insert()).changes === 1) return { kind: "claimed", holder, reclaimed: false };
      if (
        (await this.db.run("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND expires_at <= ?", scope, key, nowIso)).changes === 1 &&
        (await insert()).changes === 1
      ) {
        return { kind: "claimed", holder, reclaimed: false };
      }
      const raw = await this.db.get("SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?", scope, key);
      if (!raw) return { kind: "in_progress" }; // removed meanwhile (its holder released it): the retry may go again
      const row = readKey(raw);
      if (row.requestHash !== requestHash) return { kind: "mismatch" };
      if (row.state === "in_progress") {
        if (!(await leaseLapsed(this.db, { endsAt: row.leaseExpiresAt ?? row.createdAt, holder: row.leaseHolder }, now))) return { kind: "in_progress" };
        // its request died (its lease ran out, or its process stopped heartbeating): take the claim over, fenced on the dead holder
        const taken = await this.db.run(
          "UPDATE idempotency_keys SET lease_holder = ?, lease_expires_at = ? WHERE scope = ? AND key = ? AND state = 'in_progress' AND lease_holder IS NOT DISTINCT FROM ?",
          holder,
          leaseUntil(now),
          scope,
          key,
          row.leaseHolder,
        );
        return taken.changes === 1 ? { kind: "claimed", holder, reclaimed: true } : { kind: "in_progress" };
      }
      return { kind: "replay", response: responseOf(row) };
    });
  }

  /** the stored response of a completed key with this request's body (a read: nothing is claimed) */
  async completed(scope: string, key: string, requestHash: string, now: Date): Promise<StoredResponse | undefined> {
    const row = await this.db.get(
      "SELECT status_code, headers, body FROM idempotency_keys WHERE scope = ? AND key = ? AND request_hash = ? AND state = 'completed' AND expires_at > ?",
      scope,
      key,
      requestHash,
      now.toISOString(),
    );
    return row ? responseOf(readResponse(row)) : undefined;
  }

  /** the holder is alive: extend its lease (false: the lease was lost to a takeover) */
  async renew(scope: string, key: string, holder: string, now: Date): Promise<boolean> {
    return (
      (
        await this.db.run(
          "UPDATE idempotency_keys SET lease_expires_at = ? WHERE scope = ? AND key = ? AND state = 'in_progress' AND lease_holder = ?",
          leaseUntil(now),
          scope,
          key,
          holder,
        )
      ).changes === 1
    );
  }

  async complete(scope: string, key: string, response: StoredResponse, holder: string): Promise<void> {
    await this.db.run(
      "UPDATE idempotency_keys SET state = 'completed', status_code = ?, headers = ?, body = ?, lease_holder = NULL, lease_expires_at = NULL WHERE scope = ? AND key = ? AND state = 'in_progress' AND lease_holder = ?",
      response.status,
      JSON.stringify(response.headers),
      response.body,
      scope,
      key,
      holder,
    );
  }

  /** forget a claim whose request failed unexpectedly, so it can be retried */
  async release(scope: string, key: string, holder: string): Promise<void> {
    await this.db.run("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = 'in_progress' AND lease_holder = ?", scope, key, holder);
  }

  /**
   * A payment was settled for this key but its request did not execute (a
   * typed refusal after settlement, an unexpected failure): remember it, so
   * the retry of the same request with the same key is not charged again.
   */
  async addPrepaid(scope: string, key: string, requestHash: string, payment: { payer: string; nonce: string }, now: Date): Promise<void> {
    await this.db.run(
      "INSERT INTO prepaid_requests (scope, key, request_hash, payer, nonce, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET request_hash = excluded.request_hash, payer = excluded.payer, nonce = excluded.nonce, created_at = excluded.created_at",
      scope,
      key,
      requestHash,
      payment.payer.toLowerCase(),
      payment.nonce.toLowerCase(),
      now.toISOString(),
    );
  }

  /** consume the prepaid credit of this key and request, if there is one (atomic: one taker) */
  async takePrepaid(scope: string, key: string, requestHash: string): Promise<{ payer: string; nonce: string } | undefined> {
    return this.db.get<{ payer: string; nonce: string }>(
      "DELETE FROM prepaid_requests WHERE scope = ? AND key = ? AND request_hash = ? RETURNING payer, nonce",
      scope,
      key,
      requestHash,
    );
  }

  async purgeExpired(now: Date): Promise<number> {
    return (await this.db.run("DELETE FROM idempotency_keys WHERE expires_at <= ?", now.toISOString())).changes;
  }
}
