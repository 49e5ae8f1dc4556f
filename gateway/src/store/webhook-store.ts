/**
 * Webhook endpoints and their deliveries. An endpoint's signing secret is sealed at rest (lib/secrets.ts):
 * unlike an API key it cannot be stored as a hash, since every delivery is signed with it.
 *
 * Deliveries go out in the treasury's order: only an endpoint's oldest pending delivery is due (`dueHeads`),
 * so a receiver that is down holds its later events back until that one is through. An instance claims a
 * due delivery under a lease before it sends it (`claim`, which counts the attempt): any number of
 * instances share the work and no two send one delivery at once; a claim whose instance died (kill -9
 * mid-request) is taken again when its lease ran out, and the receiver sees the same event id again.
 */
import type { EventType, TreasuryEvent } from "@treasury/core/schemas/events";
import type { SecretBox } from "../lib/secrets";
import type { Db } from "./db";
import { toTreasuryEvent } from "./event-store";
import { rowReader, type RowOf } from "./schema/table";
import { webhookDeliveries, webhookEndpoints } from "./schema/tables/events";

export type WebhookEndpoint = Omit<RowOf<typeof webhookEndpoints>, "secretSealed">;
export type WebhookStatus = WebhookEndpoint["status"];

const readEndpoint = rowReader(webhookEndpoints, { omit: ["secret_sealed"] });
const readDelivery = rowReader(webhookDeliveries);

export interface DueDelivery {
  endpoint: WebhookEndpoint & { secret: string };
  event: TreasuryEvent;
  /** attempts before this one */
  attempts: number;
}

export class WebhookStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  async insert(e: { id: string; treasuryId: string; url: string; secret: string; types: EventType[] | null; at: string }): Promise<void> {
    await this.db.run(
      "INSERT INTO webhook_endpoints (id, treasury_id, url, secret_sealed, types, status, disabled_reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'enabled', NULL, ?, ?)",
      e.id,
      e.treasuryId,
      e.url,
      this.box.seal(e.secret),
      e.types === null ? null : JSON.stringify(e.types),
      e.at,
      e.at,
    );
  }

  /** the treasury's endpoints (not deleted), oldest first */
  async list(treasuryId: string): Promise<WebhookEndpoint[]> {
    const rows = await this.db.all("SELECT * FROM webhook_endpoints WHERE treasury_id = ? AND status <> 'deleted' ORDER BY created_at, id", treasuryId);
    return rows.map(readEndpoint);
  }

  async get(treasuryId: string, id: string): Promise<WebhookEndpoint | undefined> {
    const row = await this.db.get("SELECT * FROM webhook_endpoints WHERE treasury_id = ? AND id = ? AND status <> 'deleted'", treasuryId, id);
    return row ? readEndpoint(row) : undefined;
  }

  async count(treasuryId: string): Promise<number> {
    const row = await this.db.get<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE treasury_id = ? AND status <> 'deleted'",
      treasuryId,
    );
    return Number(row?.n ?? 0);
  }

  /** delete an endpoint: nothing more is delivered to it (its pending deliveries are dropped) */
  async delete(treasuryId: string, id: string, at: string): Promise<boolean> {
    return this.db.transaction(async () => {
      const changed = await this.db.run(
        "UPDATE webhook_endpoints SET status = 'deleted', updated_at = ? WHERE treasury_id = ? AND id = ? AND status <> 'deleted'",
        at,
        treasuryId,
        id,
      );
      if (changed.changes === 0) return false;
      await this.db.run(
        "UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint deleted', holder = NULL WHERE endpoint_id = ? AND status = 'pending'",
        id,
      );
      return true;
    });
  }

  /** enable a disabled endpoint again: its held-back deliveries are due at once, in order */
  async enable(treasuryId: string, id: string, at: string): Promise<boolean> {
    return this.db.transaction(async () => {
      const changed = await this.db.run(
        "UPDATE webhook_endpoints SET status = 'enabled', disabled_reason = NULL, updated_at = ? WHERE treasury_id = ? AND id = ? AND status = 'disabled'",
        at,
        treasuryId,
        id,
      );
      if (changed.changes === 0) return false;
      await this.db.run("UPDATE webhook_deliveries SET next_attempt_at = ?, attempts = 0 WHERE endpoint_id = ? AND status = 'pending'", at, id);
      return true;
    });
  }

  /** each enabled endpoint's oldest pending delivery, when it is due and no live claim holds it */
  async dueHeads(now: string, limit: number): Promise<{ endpointId: string; sequence: number }[]> {
    const rows = await this.db.all<{ endpoint_id: string; sequence: number | string }>(
      `SELECT d.endpoint_id, d.sequence FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
       WHERE d.status = 'pending' AND e.status = 'enabled'
         AND d.sequence = (SELECT MIN(p.sequence) FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.status = 'pending')
         AND d.next_attempt_at <= ? AND (d.holder IS NULL OR d.lease_expires_at <= ?)
       ORDER BY d.next_attempt_at LIMIT ?`,
      now,
      now,
      limit,
    );
    return rows.map((r) => ({ endpointId: r.endpoint_id, sequence: Number(r.sequence) }));
  }

  /** claim a due delivery for one attempt (counted now: an attempt cut off by a crash was one) */
  async claim(endpointId: string, sequence: number, holder: string, now: string, leaseExpiresAt: string): Promise<DueDelivery | undefined> {
    return this.db.transaction(async () => {
      const claimed = await this.db.run(
        `UPDATE webhook_deliveries SET holder = ?, lease_expires_at = ?, attempts = attempts + 1
         WHERE endpoint_id = ? AND sequence = ? AND status = 'pending' AND next_attempt_at <= ? AND (holder IS NULL OR lease_expires_at <= ?)`,
        holder,
        leaseExpiresAt,
        endpointId,
        sequence,
        now,
        now,
      );
      if (claimed.changes !== 1) return undefined;
      const endpoint = await this.db.get<{ treasury_id: string; secret_sealed: string }>(
        "SELECT * FROM webhook_endpoints WHERE id = ? AND status = 'enabled'",
        endpointId,
      );
      if (!endpoint) return undefined;
      const event = await this.db.get("SELECT * FROM events WHERE treasury_id = ? AND sequence = ?", endpoint.treasury_id, sequence);
      const delivery = readDelivery(await this.db.get("SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND sequence = ?", endpointId, sequence));
      if (!event) return undefined;
      const sealed = endpoint.secret_sealed;
      return { endpoint: { ...readEndpoint(endpoint), secret: this.box.open(sealed) }, event: toTreasuryEvent(event), attempts: delivery.attempts - 1 };
    });
  }

  /** the receiver answered 2xx: delivered (only by the claim's holder) */
  async delivered(endpointId: string, sequence: number, holder: string, at: string): Promise<boolean> {
    const r = await this.db.run(
      "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, holder = NULL, lease_expires_at = NULL, last_error = NULL WHERE endpoint_id = ? AND sequence = ? AND holder = ? AND status = 'pending'",
      at,
      endpointId,
      sequence,
      holder,
    );
    return r.changes === 1;
  }

  /**
   * The attempt failed: try again at `retryAt`, or (no retry left: `retryAt` undefined) give the delivery up
   * and disable the endpoint, saying why, in one transaction.
   */
  async failed(endpointId: string, sequence: number, holder: string, error: string, at: string, retryAt: string | undefined): Promise<void> {
    await this.db.transaction(async () => {
      if (retryAt !== undefined) {
        await this.db.run(
          "UPDATE webhook_deliveries SET holder = NULL, lease_expires_at = NULL, last_error = ?, next_attempt_at = ? WHERE endpoint_id = ? AND sequence = ? AND holder = ? AND status = 'pending'",
          error,
          retryAt,
          endpointId,
          sequence,
          holder,
        );
        return;
      }
      const r = await this.db.run(
        "UPDATE webhook_deliveries SET holder = NULL, lease_expires_at = NULL, last_error = ? WHERE endpoint_id = ? AND sequence = ? AND holder = ? AND status = 'pending'",
        error,
        endpointId,
        sequence,
        holder,
      );
      if (r.changes === 0) return;
      await this.db.run(
        "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ? AND status = 'enabled'",
        `every attempt to deliver event ${sequence} of the treasury's log failed; the last: ${error}`,
        at,
        endpointId,
      );
    });
  }

  /** an endpoint's deliveries (tests, the delivery log) */
  async deliveries(endpointId: string): Promise<RowOf<typeof webhookDeliveries>[]> {
    return (await this.db.all("SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY sequence", endpointId)).map(readDelivery);
  }
}
