/**
 * Treasuries and what hangs on them: API keys, access requests, the outbox, the fee audit trail and the
 * ratchet. Each table as it is at the last version of the history (schema/history.ts, which says when each
 * column came); the stores read their rows through these declarations (schema/table.ts `rowReader`).
 */
import type { Action } from "@treasury/core/actions";
import { flag, integer, json, money, serial, text, timestamp } from "../column";
import { Table } from "../table";

export const treasuries = new Table(
  "treasuries",
  {
    id: text().primaryKey(),
    wallet_address: text<`0x${string}`>().notNull(),
    chain: text().notNull().oneOf(["arbitrum", "base"]),
    preset: text().notNull().oneOf(["conservative", "balanced", "aggressive"]),
    execution_mode: text().notNull().oneOf(["wallet", "managed"]),
    status: text().notNull(),
    origin: text<"registration" | "sandbox_key" | "x402_payer" | "operator">().notNull(),
    btc_units: money().notNull().default("'0'"),
    eth_units: money().notNull().default("'0'"),
    usdc_micro: money().notNull().default("'0'"),
    debt_micro: money().notNull().default("'0'"),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    // who proved control of the wallet: 'unproven' (a bare registration, reachable only with its own key), 'proven' (a
    // signed ownership statement, EIP-712 or EIP-1271), 'paid' (created by the payer's own x402 payment)
    ownership: text().notNull().default("'unproven'").oneOf(["unproven", "proven", "paid"]),
    ownership_proof: json<Record<string, unknown>>(),
    // USDC a ledger's deposits supplied to Aave (aUSDC on a chain), apart from the idle usdc_micro
    usdc_supplied_micro: money().notNull().default("'0'"),
  },
  { insertionOrder: true },
);

export const apiKeys = new Table("api_keys", {
  id: text().primaryKey(),
  key_hash: text().notNull().unique(),
  // console sessions (sk_console_) are a kind of their own, bound to the Safe's treasury, short-lived
  kind: text().notNull().oneOf(["sandbox", "live", "console"]),
  last4: text().notNull(),
  treasury_id: text().references("treasuries(id)"),
  access_request_id: text(),
  created_at: timestamp().notNull(),
  expires_at: timestamp(),
  revoked_at: timestamp(),
  // the owner a console session was issued to, checked again on chain while the key is used
  owner_address: text(),
  // why a key was revoked (owner_removed: its owner left the Safe)
  revoked_reason: text<"owner_removed">(),
});

const ACCESS_STATUSES = ["received", "in_review", "closed"] as const;
type AccessStatus = (typeof ACCESS_STATUSES)[number];

export const accessRequests = new Table("access_requests", {
  id: text().primaryKey(),
  status: text().notNull().oneOf(ACCESS_STATUSES),
  operator_name: text().notNull(),
  operator_email: text().notNull(),
  use_case: text().notNull(),
  agent_name: text(),
  agent_framework: text(),
  company: text(),
  wallet_address: text(),
  chain: text(),
  expected_monthly_volume_usdc: text(),
  submitted_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  reviewer: text(),
  outcome: text().oneOf(["approved", "declined"]),
  outcome_note: text(),
  closed_at: timestamp(),
});

export const accessRequestEvents = new Table("access_request_events", {
  seq: serial(),
  access_request_id: text().notNull().references("access_requests(id)"),
  from_status: text<AccessStatus>(),
  to_status: text<AccessStatus>().notNull(),
  actor: text().notNull(),
  note: text(),
  at: timestamp().notNull(),
});

export const outbox = new Table("outbox", {
  id: text().primaryKey(),
  kind: text().notNull(),
  recipient: text().notNull(),
  subject: text().notNull(),
  // sealed (lib/secrets.ts), scrubbed once delivered
  body: text(),
  related_id: text(),
  created_at: timestamp().notNull(),
  delivered_at: timestamp(),
});

export const feeAudit = new Table(
  "fee_audit",
  {
    id: text().primaryKey(),
    treasury_id: text().notNull().references("treasuries(id)"),
    action: text<Action>().notNull(),
    amount_micro: money().notNull(),
    fee_micro: money().notNull(),
    fee_bps: integer().notNull(),
    fee_basis: text().notNull(),
    fee_tier: text().notNull(),
    trigger: text().notNull(),
    execution_ref: text().notNull(),
    created_at: timestamp().notNull(),
    // only live, settled fee-bearing executions move the platform volume; sandbox ones are audited as such
    environment: text().notNull().default("'sandbox'").oneOf(["sandbox", "live"]),
    counts_toward_volume: flag().notNull().default("0"),
  },
  { insertionOrder: true },
);

/** one row (id 1); the database refuses a lower tier (history.ts: the one-way trigger) */
export const feeRatchet = new Table("fee_ratchet", {
  id: integer().primaryKey().check("id = 1"),
  tier_index: integer().notNull(),
  platform_volume_micro: money().notNull(),
  updated_at: timestamp().notNull(),
});
