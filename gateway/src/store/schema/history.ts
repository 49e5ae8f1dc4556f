/**
 * The schema's history, once for both dialects: each version's steps (schema/steps.ts) over the declared
 * tables (schema/tables/), rendered to SQLite's and PostgreSQL's migrations by schema/render.ts with the
 * rules of schema/dialect.ts. PostgreSQL's history starts at version 5 with everything up to it.
 *
 * Append only: a released version is never edited (a kept database has run it); a change is a new version
 * at the end, and the table's declaration changes with it (render.ts `differences` holds them together).
 * test/store/schema-snapshot.test.ts holds what every version leaves on both dialects.
 */
import { text } from "./column";
import { addColumns, changeColumn, createIndex, createTable, data, dropOneWay, insertionOrder, oneWay, only, type Version } from "./steps";
import type { Table } from "./table";
import {
  envelopes,
  envelopeSteps,
  executions,
  idempotencyKeys,
  instances,
  prepaidRequests,
  rateLimitHits,
  signedNonces,
  treasurySlots,
  x402Payments,
} from "./tables/actions";
import { automationNonces, delegations, engineShards, positionSamples, protectionActions, protectionClaims, safeTransactions } from "./tables/protection";
import { events, eventSequences, webhookDeliveries, webhookEndpoints } from "./tables/events";
import { x402Channels, x402Redemptions } from "./tables/sessions";
import { accessRequestEvents, accessRequests, apiKeys, feeAudit, feeRatchet, outbox, treasuries } from "./tables/treasury";

/** the ratchet only moves one way: the database refuses a lower tier */
const RATCHET_ONE_WAY = { name: "fee_ratchet_one_way", table: "fee_ratchet", column: "tier_index", message: "fee ratchet is one-way" };

export const HISTORY: readonly Version[] = [
  {
    version: 1,
    name: "foundation",
    steps: [
      createTable(treasuries, { through: "updated_at" }),
      createIndex("treasuries_wallet", treasuries, ["wallet_address"]),
      createTable(apiKeys, { through: "revoked_at", was: { kind: text().notNull().oneOf(["sandbox", "live"]) } }),
      createIndex("api_keys_treasury", apiKeys, ["treasury_id"]),
      createTable(accessRequests),
      createTable(accessRequestEvents),
      createTable(outbox),
      createTable(feeAudit, { through: "created_at" }),
      createIndex("fee_audit_treasury", feeAudit, ["treasury_id", "created_at"]),
      createTable(feeRatchet),
      data("INSERT INTO fee_ratchet (id, tier_index, platform_volume_micro, updated_at) VALUES (1, 0, '0', '1970-01-01T00:00:00.000Z')"),
      oneWay(RATCHET_ONE_WAY),
    ],
  },
  {
    version: 2,
    name: "actions_envelopes_idempotency",
    steps: [
      createTable(idempotencyKeys, { through: "expires_at" }),
      createIndex("idempotency_expiry", idempotencyKeys, ["expires_at"]),
      createTable(envelopes, { through: "completed_at" }),
      createIndex("envelopes_treasury", envelopes, ["treasury_id", "status"]),
      createTable(envelopeSteps, { through: "relayed_at", was: { status: text().notNull().oneOf(["awaiting_signature", "relayed"]) } }),
      createTable(executions),
      createIndex("executions_treasury", executions, ["treasury_id", "created_at"]),
    ],
  },
  { version: 3, name: "x402_payments", steps: [createTable(x402Payments, { through: "settled_at" })] },
  {
    version: 4,
    name: "delegations_protection",
    steps: [
      createTable(delegations, { through: "armed" }),
      createTable(protectionActions, { through: "created_at" }),
      createIndex("protection_actions_treasury", protectionActions, ["treasury_id", "created_at"]),
    ],
  },
  {
    version: 5,
    name: "trust_in_the_money_path",
    steps: [
      // who proved control of a treasury's wallet; a treasury its payer's x402 payment created is 'paid'
      ...addColumns(treasuries, "ownership", "ownership_proof"),
      data("UPDATE treasuries SET ownership = 'paid' WHERE origin = 'x402_payer'"),
      createIndex("treasuries_wallet_ownership", treasuries, ["lower(wallet_address)", "ownership"]),
      createTable(signedNonces),
      createTable(treasurySlots),
      createTable(prepaidRequests),
      ...addColumns(envelopes, "fee_bps", "fee_basis"),
      // steps gain 'broadcasting' (claimed, sent or about to be, reconciled with the chain) and the nonce they were signed with
      ...addColumns(envelopeSteps, "signer", "tx_nonce", "broadcast_at", "failed_attempts"),
      changeColumn(envelopeSteps, "status"),
      createIndex("envelope_steps_hash", envelopeSteps, ["tx_hash"], { unique: true, where: "tx_hash IS NOT NULL" }),
      ...addColumns(feeAudit, "environment", "counts_toward_volume"),
      // volume counted before this release came from sandbox executions, which count for nothing: recount it
      dropOneWay(RATCHET_ONE_WAY),
      data("UPDATE fee_ratchet SET tier_index = 0, platform_volume_micro = '0' WHERE id = 1"),
      oneWay(RATCHET_ONE_WAY),
      // a delegation is attached only with the Safe's own signature; one proven delegation per Safe
      ...addColumns(delegations, "chain", "proof", "proven_at"),
      createIndex("delegations_one_per_safe", delegations, ["chain", "lower(safe)"], { unique: true, where: "proven_at IS NOT NULL" }),
      ...addColumns(protectionActions, "safe"),
      data("UPDATE protection_actions SET safe = (SELECT safe FROM delegations d WHERE d.treasury_id = protection_actions.treasury_id)"),
      createIndex("protection_actions_safe", protectionActions, ["lower(safe)", "created_at"]),
    ],
  },
  {
    version: 6,
    name: "many_instances",
    steps: [
      createTable(rateLimitHits),
      ...addColumns(idempotencyKeys, "lease_expires_at", "lease_holder"),
      ...addColumns(x402Payments, "lease_holder", "lease_expires_at"),
      createTable(protectionClaims),
      // queries order ties by "rowid" on both backends
      insertionOrder(treasuries),
      insertionOrder(feeAudit),
      insertionOrder(protectionActions),
    ],
  },
  {
    version: 7,
    name: "fee_audit_page_order",
    steps: [
      // a page of a treasury's audit trail (ORDER BY created_at, rowid LIMIT n) is one index range, even among equal times
      only(
        "postgres",
        "SQLite's fee_audit_treasury index already ends with the implicit rowid",
        createIndex("fee_audit_treasury_order", feeAudit, ["treasury_id", "created_at", "rowid"]),
      ),
    ],
  },
  {
    version: 8,
    name: "safe_transactions_console",
    steps: [
      createTable(safeTransactions, { through: "updated_at" }),
      createIndex("safe_transactions_treasury", safeTransactions, ["treasury_id", "created_at"]),
      createIndex("safe_transactions_open", safeTransactions, ["status"], { where: "status IN ('awaiting_signatures','executing')" }),
      createTable(positionSamples),
      // console sessions: an API key kind of its own
      changeColumn(apiKeys, "kind"),
    ],
  },
  { version: 9, name: "safe_execution_gas", steps: addColumns(safeTransactions, "gas_usd") },
  { version: 10, name: "console_session_owner", steps: addColumns(apiKeys, "owner_address", "revoked_reason") },
  {
    version: 11,
    name: "instances_and_pending_settlements",
    steps: [createTable(instances, { through: "heartbeat_at" }), ...addColumns(x402Payments, "pending_settlement")],
  },
  { version: 12, name: "delegation_upgrade", steps: addColumns(delegations, "pending_upgrade") },
  {
    version: 13,
    name: "x402_sessions",
    steps: [
      createTable(x402Channels),
      createIndex("x402_channels_unredeemed", x402Channels, ["first_unredeemed_at"], { where: "vouchers_unredeemed > 0" }),
      createTable(x402Redemptions),
    ],
  },
  { version: 14, name: "ledger_supplied_usdc", steps: addColumns(treasuries, "usdc_supplied_micro") },
  {
    version: 15,
    name: "protection_at_scale",
    steps: [
      // one heartbeat row per engine, under the key it holds: engines with one key no longer share a row
      ...addColumns(instances, "automation"),
      // the one row engines kept before, `engine:<automation>`, stays an engine's row of that key until it ages out
      data("UPDATE instances SET automation = substr(id, 8) WHERE id LIKE 'engine:%'"),
      createIndex("instances_engines", instances, ["automation", "heartbeat_at"], { where: "automation IS NOT NULL" }),
      createTable(engineShards),
    ],
  },
  { version: 16, name: "automation_nonces", steps: [createTable(automationNonces)] },
  {
    version: 17,
    name: "events_and_webhooks",
    steps: [
      createTable(events),
      createIndex("events_dedupe", events, ["treasury_id", "dedupe_key"], { unique: true, where: "dedupe_key IS NOT NULL" }),
      createTable(eventSequences),
      createTable(webhookEndpoints),
      createIndex("webhook_endpoints_treasury", webhookEndpoints, ["treasury_id"]),
      createTable(webhookDeliveries),
      createIndex("webhook_deliveries_due", webhookDeliveries, ["status", "next_attempt_at"], { where: "status = 'pending'" }),
      // the deadline watch's query: envelopes awaiting signature by expiry
      createIndex("envelopes_awaiting_expiry", envelopes, ["expires_at"], { where: "status = 'awaiting_signature'" }),
    ],
  },
];

/** the tables the history arrives at */
export const TABLES: readonly Table[] = [
  treasuries,
  apiKeys,
  accessRequests,
  accessRequestEvents,
  outbox,
  feeAudit,
  feeRatchet,
  idempotencyKeys,
  envelopes,
  envelopeSteps,
  executions,
  x402Payments,
  signedNonces,
  treasurySlots,
  prepaidRequests,
  rateLimitHits,
  instances,
  delegations,
  protectionActions,
  protectionClaims,
  engineShards,
  safeTransactions,
  positionSamples,
  automationNonces,
  x402Channels,
  x402Redemptions,
  events,
  eventSequences,
  webhookEndpoints,
  webhookDeliveries,
] as unknown as readonly Table[];
