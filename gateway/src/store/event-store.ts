/**
 * The treasury's event log: an outbox. `append` runs inside the transaction of the change it reports (it
 * joins the caller's), so an event exists exactly when its change committed: never for one that rolled
 * back, never missing for one that committed. In the same transaction it takes the treasury's next sequence
 * number (one row per treasury: two appends serialize on it, and the log has no gap) and writes a delivery
 * for each enabled webhook endpoint of the treasury that takes the type, which the delivery worker sends
 * (events/webhook-delivery.ts). Once the transaction committed, the readers of this process are woken (streams
 * and MCP subscribers `onAppended`, the delivery worker `onDelivery` when the event is due at an endpoint);
 * readers of other processes find the row on their next poll.
 */
import { EventEmitter } from "node:events";
import { newId } from "@treasury/core/lib/ids";
import { afterCommit } from "@treasury/core/lib/store-transaction";
import { EVENT_TYPES, type EventData, type EventType, type TreasuryEvent } from "@treasury/core/schemas/events";
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { events } from "./schema/tables/events";

const read = rowReader(events);

export const toTreasuryEvent = (raw: unknown): TreasuryEvent => {
  const r = read(raw);
  return { id: r.id, type: r.type, treasury_id: r.treasuryId, sequence: r.sequence, created_at: r.createdAt, data: r.data };
};

export interface AppendOptions {
  /** written once per key and treasury: a second append of the same key is skipped (undefined answered) */
  dedupeKey?: string;
  /** deliver to this webhook endpoint only (a test event), instead of every endpoint that takes the type */
  onlyEndpoint?: string;
  now?: Date;
}

export class EventStore {
  /** `appended` (treasury id): an event of that treasury committed in this process */
  private readonly bus = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly db: Db,
    /** false: nothing is written (EVENT_LOG=off, the bench's measure of what the log costs) */
    private readonly enabled = true,
  ) {}

  /** record an event in the caller's transaction (its own, outside one); its data is checked against the type's schema */
  async append<T extends EventType>(treasuryId: string, type: T, data: EventData<T>, opts: AppendOptions = {}): Promise<TreasuryEvent | undefined> {
    if (!this.enabled) return undefined;
    const parsed = EVENT_TYPES[type].data.parse(data) as Record<string, unknown>;
    const at = (opts.now ?? new Date()).toISOString();
    const event = await this.db.transaction(async () => {
      if (opts.dedupeKey !== undefined) {
        const seen = await this.db.get("SELECT 1 AS one FROM events WHERE treasury_id = ? AND dedupe_key = ?", treasuryId, opts.dedupeKey);
        if (seen) return undefined;
      }
      const row = await this.db.get<{ last_sequence: number | string }>(
        `INSERT INTO event_sequences (treasury_id, last_sequence) VALUES (?, 1)
         ON CONFLICT (treasury_id) DO UPDATE SET last_sequence = event_sequences.last_sequence + 1
         RETURNING last_sequence`,
        treasuryId,
      );
      const e: TreasuryEvent = { id: newId("evt"), type, treasury_id: treasuryId, sequence: Number(row!.last_sequence), created_at: at, data: parsed };
      await this.db.run(
        "INSERT INTO events (id, treasury_id, sequence, type, data, created_at, dedupe_key) VALUES (?, ?, ?, ?, ?, ?, ?)",
        e.id,
        e.treasury_id,
        e.sequence,
        e.type,
        JSON.stringify(e.data),
        e.created_at,
        opts.dedupeKey ?? null,
      );
      // the endpoints due this event: read first (an index lookup), written only when there are any
      const endpoints = await this.db.all<{ id: string; types: string | null }>(
        "SELECT id, types FROM webhook_endpoints WHERE treasury_id = ? AND status = 'enabled'",
        treasuryId,
      );
      const due = endpoints.filter((w) =>
        opts.onlyEndpoint ? w.id === opts.onlyEndpoint : w.types === null || (JSON.parse(w.types) as string[]).includes(type),
      );
      for (const w of due) {
        await this.db.run(
          "INSERT INTO webhook_deliveries (endpoint_id, event_id, sequence, status, attempts, next_attempt_at) VALUES (?, ?, ?, 'pending', 0, ?)",
          w.id,
          e.id,
          e.sequence,
          at,
        );
      }
      return { e, deliveries: due.length };
    });
    if (!event) return undefined;
    afterCommit(() => {
      this.bus.emit("appended", treasuryId);
      // the delivery worker is woken only when the event is due somewhere
      if (event.deliveries > 0) this.bus.emit("delivery");
    });
    return event.e;
  }

  /** the treasury's events after `sequence`, oldest first */
  async after(treasuryId: string, sequence: number, limit: number): Promise<TreasuryEvent[]> {
    const rows = await this.db.all("SELECT * FROM events WHERE treasury_id = ? AND sequence > ? ORDER BY sequence LIMIT ?", treasuryId, sequence, limit);
    return rows.map(toTreasuryEvent);
  }

  /** the treasury's last sequence number (0 before its first event) */
  async lastSequence(treasuryId: string): Promise<number> {
    const row = await this.db.get<{ last_sequence: number | string }>("SELECT last_sequence FROM event_sequences WHERE treasury_id = ?", treasuryId);
    return row ? Number(row.last_sequence) : 0;
  }

  /** the last event of a type (the protection engine's last zone, say) */
  async lastOfType<T extends EventType>(treasuryId: string, type: T): Promise<TreasuryEvent | undefined> {
    const row = await this.db.get("SELECT * FROM events WHERE treasury_id = ? AND type = ? ORDER BY sequence DESC LIMIT 1", treasuryId, type);
    return row ? toTreasuryEvent(row) : undefined;
  }

  /** the last sequence of each of these treasuries' logs (0: none yet), in one read */
  async lastSequences(treasuryIds: readonly string[]): Promise<Map<string, number>> {
    const last = new Map<string, number>(treasuryIds.map((id) => [id, 0]));
    for (let i = 0; i < treasuryIds.length; i += 500) {
      const chunk = treasuryIds.slice(i, i + 500);
      const rows = await this.db.all<{ treasury_id: string; last_sequence: number | string }>(
        `SELECT treasury_id, last_sequence FROM event_sequences WHERE treasury_id IN (${chunk.map(() => "?").join(", ")})`,
        ...chunk,
      );
      for (const r of rows) last.set(r.treasury_id, Number(r.last_sequence));
    }
    return last;
  }

  /** the last approval or revocation of the treasury's delegation its log recorded */
  async lastApproval(treasuryId: string): Promise<"approved" | "revoked" | undefined> {
    const row = await this.db.get<{ data: string }>(
      `SELECT data FROM events WHERE treasury_id = ? AND type = 'delegation.changed' AND (data LIKE '%"change":"approved"%' OR data LIKE '%"change":"revoked"%')
       ORDER BY sequence DESC LIMIT 1`,
      treasuryId,
    );
    return row ? (JSON.parse(row.data) as { change: "approved" | "revoked" }).change : undefined;
  }

  /** wake `fn` whenever an event with a webhook delivery committed in this process; returns the unsubscribe */
  onDelivery(fn: () => void): () => void {
    this.bus.on("delivery", fn);
    return () => this.bus.off("delivery", fn);
  }

  /** wake `fn` whenever an event committed in this process (any treasury's); returns the unsubscribe */
  onAppended(fn: (treasuryId: string) => void): () => void {
    this.bus.on("appended", fn);
    return () => this.bus.off("appended", fn);
  }
}
