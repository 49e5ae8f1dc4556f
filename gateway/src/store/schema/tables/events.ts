/**
 * The treasury's event log and its webhooks (schema version 17): every event written in the transaction of
 * the change it reports, numbered per treasury without gaps; each webhook endpoint's copy of each event it is
 * due, claimed by the instance that delivers it (store/event-store.ts, store/webhook-store.ts).
 */
import type { EventType } from "@treasury/core/schemas/events";
import { integer, json, text, timestamp } from "../column";
import { Table } from "../table";

export const events = new Table(
  "events",
  {
    // 128 random bits (evt_ and 32 hex digits): a receiver's deduplication key; rows are found by (treasury, sequence)
    id: text().notNull(),
    treasury_id: text().notNull().references("treasuries(id)"),
    sequence: integer().notNull(),
    // one of EVENT_TYPE_NAMES (checked where it is written, not by a CHECK: a new type needs no migration)
    type: text<EventType>().notNull(),
    data: json<Record<string, unknown>>().notNull(),
    created_at: timestamp().notNull(),
    // an event that must be written once per occurrence (an envelope's expiring): a second write of the same key is skipped
    dedupe_key: text(),
  },
  // one index: the key. (treasury_id, dedupe_key) is unique where a key is given: a partial index (history.ts)
  { primaryKey: ["treasury_id", "sequence"] },
);

/** the last sequence number each treasury's log gave out (one row per treasury: appends serialize on it) */
export const eventSequences = new Table("event_sequences", {
  treasury_id: text().primaryKey().references("treasuries(id)"),
  last_sequence: integer().notNull(),
});

export const webhookEndpoints = new Table("webhook_endpoints", {
  id: text().primaryKey(),
  treasury_id: text().notNull().references("treasuries(id)"),
  url: text().notNull(),
  // the signing secret, sealed at rest (lib/secrets.ts SecretBox): shown once, needed to sign every delivery
  secret_sealed: text().notNull(),
  // the event types it receives (null: every type)
  types: json<EventType[]>(),
  status: text().notNull().oneOf(["enabled", "disabled", "deleted"]),
  disabled_reason: text(),
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
});

/** one event due at one endpoint: delivered in the treasury's order, one attempt at a time, under a lease */
export const webhookDeliveries = new Table(
  "webhook_deliveries",
  {
    endpoint_id: text().notNull().references("webhook_endpoints(id)"),
    // the event: the endpoint's treasury's, at this sequence (its id beside it, for the delivery's log)
    event_id: text().notNull(),
    sequence: integer().notNull(),
    status: text().notNull().oneOf(["pending", "delivered", "failed"]),
    attempts: integer().notNull().default("0"),
    next_attempt_at: timestamp().notNull(),
    holder: text(),
    lease_expires_at: timestamp(),
    last_error: text(),
    delivered_at: timestamp(),
  },
  { primaryKey: ["endpoint_id", "sequence"] },
);
