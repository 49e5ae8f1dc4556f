/**
 * What an action goes through: idempotency keys, envelopes and their steps, executions, x402 payments and
 * prepaid credits, signed statements' nonces, the treasury's conflict slot, rate-limit windows and the
 * instances sharing the store. Each table as it is at the last version (schema/history.ts).
 */
import type { TreasuryAction } from "@treasury/core/actions";
import { epochMs, integer, json, money, text, timestamp } from "../column";
import { Table } from "../table";

export const idempotencyKeys = new Table(
  "idempotency_keys",
  {
    scope: text().notNull(),
    key: text().notNull(),
    request_hash: text().notNull(),
    state: text().notNull().oneOf(["in_progress", "completed"]),
    status_code: integer(),
    headers: json<Record<string, string>>(),
    body: text(),
    created_at: timestamp().notNull(),
    expires_at: timestamp().notNull(),
    // an in-progress key is held by a lease its request renews; a dead request's lease expires and the key is reclaimed
    lease_expires_at: timestamp(),
    lease_holder: text(),
  },
  { primaryKey: ["scope", "key"] },
);

export const envelopes = new Table("envelopes", {
  tx_id: text().primaryKey(),
  treasury_id: text().notNull().references("treasuries(id)"),
  action: text<TreasuryAction>().notNull(),
  amount_micro: money().notNull(),
  fee_micro: money().notNull(),
  params: json<Record<string, unknown>>().notNull(),
  chain: text().notNull(),
  chain_id: integer().notNull(),
  status: text().notNull().oneOf(["awaiting_signature", "relayed", "expired"]),
  created_at: timestamp().notNull(),
  expires_at: timestamp().notNull(),
  completed_at: timestamp(),
  // the envelope's fee is the fee: kept with it, recorded as signed
  fee_bps: integer(),
  fee_basis: text(),
});

export const envelopeSteps = new Table(
  "envelope_steps",
  {
    tx_id: text().primaryKey(),
    envelope_tx_id: text().notNull().references("envelopes(tx_id)"),
    seq: integer().notNull(),
    kind: text().notNull(),
    to_address: text<`0x${string}`>().notNull().as("to"),
    data: text<`0x${string}`>().notNull(),
    value: text().notNull(),
    summary: json<Record<string, unknown>>().notNull(),
    // 'broadcasting': claimed, sent or about to be, reconciled with the chain
    status: text().notNull().oneOf(["awaiting_signature", "broadcasting", "relayed"]),
    tx_hash: text(),
    signed_transaction: text(),
    receipt: json<Record<string, unknown>>(),
    relayed_at: timestamp(),
    signer: text(),
    tx_nonce: integer(),
    broadcast_at: timestamp(),
    failed_attempts: json<{ tx_hash: string; reason: string; at: string }[]>().notNull().default("'[]'"),
  },
  { unique: [["envelope_tx_id", "seq"]] },
);

export const executions = new Table("executions", {
  id: text().primaryKey(),
  treasury_id: text().notNull().references("treasuries(id)"),
  action: text().notNull(),
  amount_micro: money().notNull(),
  fee_micro: money().notNull(),
  origin: text<"managed" | "relay">().notNull(),
  envelope_tx_id: text(),
  receipt: json<Record<string, unknown>>().notNull(),
  created_at: timestamp().notNull(),
});

export const x402Payments = new Table(
  "x402_payments",
  {
    payer: text().notNull(),
    nonce: text().notNull(),
    route: text().notNull(),
    amount_atomic: money().notNull(),
    state: text().notNull().oneOf(["locked", "settled"]),
    treasury_id: text(),
    transaction_hash: text(),
    outcome_status: integer(),
    created_at: timestamp().notNull(),
    settled_at: timestamp(),
    // a locked payment is held by a lease: a request that died mid-settlement is taken over (settled once, served once)
    lease_holder: text(),
    lease_expires_at: timestamp(),
    // a settlement whose outcome is not known: the proof and requirements it was sent with (JSON), to settle again
    pending_settlement: text(),
  },
  { primaryKey: ["payer", "nonce"] },
);

/** a signed statement's nonce is good once per signer */
export const signedNonces = new Table(
  "signed_nonces",
  {
    signer: text().notNull(),
    nonce: text().notNull(),
    purpose: text().notNull(),
    used_at: timestamp().notNull(),
  },
  { primaryKey: ["signer", "nonce"] },
);

/** the conflict slot of a treasury: claimed atomically with the conflict check, before any payment is settled */
export const treasurySlots = new Table("treasury_slots", {
  treasury_id: text().primaryKey().references("treasuries(id)"),
  holder: text().notNull(),
  claimed_at: timestamp().notNull(),
  expires_at: timestamp().notNull(),
});

/** a payment settled for an Idempotency-Key whose request then did not execute: the key's retry is not charged again */
export const prepaidRequests = new Table(
  "prepaid_requests",
  {
    scope: text().notNull(),
    key: text().notNull(),
    request_hash: text().notNull(),
    payer: text().notNull(),
    nonce: text().notNull(),
    created_at: timestamp().notNull(),
  },
  { primaryKey: ["scope", "key"] },
);

/** rate-limit windows shared by every instance: one counter per (limiter, identity) */
export const rateLimitHits = new Table("rate_limit_hits", {
  key: text().primaryKey(),
  hits: integer().notNull(),
  reset_at: epochMs().notNull(),
});

/** the gateway processes and protection engines sharing this store, each with its heartbeat (store/instance-store.ts) */
export const instances = new Table("instances", {
  id: text().primaryKey(),
  started_at: timestamp().notNull(),
  heartbeat_at: timestamp().notNull(),
  // a protection engine's row: the automation key it holds, lowercase (null for a gateway process)
  automation: text(),
});
