/**
 * The treasury's events, declared once: the closed list of types, what each one's `data` holds (in the API's
 * own units: decimal text for token amounts, ISO-8601 times, the ids the API answers with), and the envelope
 * every event travels in, on every route it takes (the gateway's event log and its list, its Server-Sent Events
 * stream, webhook deliveries, MCP resources). The OpenAPI document's `webhooks` object and docs/API.md are
 * derived from this list.
 */
import { z } from "./zod";

const Hash = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
/** an amount in whole units of its token, as exact decimal text ("12.5" USDC) */
const Amount = z.string().regex(/^\d+(\.\d+)?$/);
const Time = z.string().datetime({ offset: true });

/** the health zones of a position (protection terms): below the engine's trigger it is acted on */
export const HEALTH_ZONES = ["safe", "active", "ceiling", "hard_ceiling"] as const;
export type HealthZone = (typeof HEALTH_ZONES)[number];

export const EVENT_TYPES = {
  "health.zone_changed": {
    summary: "The position's health moved into another zone (safe, active, ceiling, hard_ceiling), as the protection engine read it",
    data: z.object({
      zone: z.enum(HEALTH_ZONES),
      previous_zone: z.enum(HEALTH_ZONES).nullable(),
      health_factor: z.number().nullable(),
      ltv: z.number(),
    }),
  },
  "protection.acted": {
    summary: "The protection engine repaid debt from the Safe's collateral: the record, the trigger and the cost",
    data: z.object({
      action_id: z.string(),
      safe: Address.nullable(),
      trigger: z.object({ health_before: z.number().nullable(), ltv_before: z.number().nullable() }),
      repaid_usdc: Amount.nullable(),
      ltv_after: z.number().nullable(),
      tx_hashes: z.array(Hash),
      gas_usd: z.number(),
    }),
  },
  "protection.failed": {
    summary: "The protection engine tried to act and could not: the record and the reason",
    data: z.object({
      action_id: z.string(),
      safe: Address.nullable(),
      reason: z.string(),
      trigger: z.object({ health_before: z.number().nullable(), ltv_before: z.number().nullable() }),
    }),
  },
  "envelope.created": {
    summary: "An unsigned-transaction envelope was prepared for the treasury's wallet",
    data: z.object({ envelope_id: z.string(), action: z.string(), steps: z.number().int(), expires_at: Time }),
  },
  "envelope.expiring": {
    summary: "An envelope not yet relayed in full expires in two minutes",
    data: z.object({ envelope_id: z.string(), action: z.string(), expires_at: Time }),
  },
  "envelope.expired": {
    summary: "An envelope expired before all its steps were relayed; the treasury's slot is free again",
    data: z.object({ envelope_id: z.string(), action: z.string(), expired_at: Time }),
  },
  "relay.confirmed": {
    summary: "A relayed step of an envelope was mined and succeeded",
    data: z.object({ envelope_id: z.string(), step: z.number().int(), tx_hash: Hash, execution_id: z.string().nullable() }),
  },
  "relay.failed": {
    summary: "A relayed step of an envelope was mined and reverted",
    data: z.object({ envelope_id: z.string(), step: z.number().int(), tx_hash: Hash, reason: z.string() }),
  },
  "safe_transaction.awaiting_signatures": {
    summary: "A managed action is a Safe transaction waiting for its owners' signatures",
    data: z.object({ safe_transaction_id: z.string(), safe: Address, action: z.string(), amount_usdc: Amount, safe_tx_hash: Hash, expires_at: Time }),
  },
  "safe_transaction.executed": {
    summary: "A Safe transaction was executed on chain (status executed, or failed when it reverted)",
    data: z.object({ safe_transaction_id: z.string(), status: z.enum(["executed", "failed"]), tx_hash: Hash.nullable() }),
  },
  "delegation.changed": {
    summary: "The Safe's delegation to the protection module changed (registered, approved, revoked, upgraded, disarmed, armed)",
    data: z.object({ change: z.string(), safe: Address.nullable(), module: Address.nullable() }),
  },
  "payment.settled": {
    summary: "An x402 payment for this treasury's request was settled",
    data: z.object({ payer: Address, amount_usdc: Amount, route: z.string(), transaction: z.string().nullable() }),
  },
  "session.redeemed": {
    summary: "Vouchers of the treasury wallet's x402 session were redeemed on chain",
    data: z.object({ channel_id: z.string(), amount_usdc: Amount, transaction: z.string().nullable() }),
  },
  "session.withdrawal_started": {
    summary: "The payer started withdrawing an x402 session's unspent deposit",
    data: z.object({ channel_id: z.string(), withdrawable_at: Time.nullable() }),
  },
  "access_request.status_changed": {
    summary: "An access request of the treasury was approved, denied or expired",
    data: z.object({ access_request_id: z.string(), status: z.string() }),
  },
  "webhook.test": {
    summary: "A test event, sent on request to one webhook endpoint only",
    data: z.object({ webhook_id: z.string() }),
  },
} as const satisfies Record<string, { summary: string; data: z.ZodType }>;

export type EventType = keyof typeof EVENT_TYPES;
export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as [EventType, ...EventType[]];
export type EventData<T extends EventType> = z.infer<(typeof EVENT_TYPES)[T]["data"]>;

/** an event as every route carries it */
export const TreasuryEvent = z
  .object({
    id: z.string().openapi({
      description: "the event's id (evt_ and 32 hex digits): deliveries of one event carry it, for the receiver to deduplicate",
      example: "evt_5f0c8a7c1d2e4b6a9c3e0f1a2b3c4d5e",
    }),
    type: z.enum(EVENT_TYPE_NAMES),
    treasury_id: z.string(),
    sequence: z
      .number()
      .int()
      .positive()
      .openapi({ description: "the event's place in its treasury's log: 1, 2, 3… with no gap (the stream's event id, the list's cursor)" }),
    created_at: Time,
    data: z.record(z.string(), z.unknown()).openapi({ description: "what happened: the type's own shape (see the webhooks of this document)" }),
  })
  .openapi("TreasuryEvent", { description: "Something that happened to a treasury, in the order its log recorded it." });
export type TreasuryEvent = z.infer<typeof TreasuryEvent>;

/** the event of one type, with its data's own schema (the OpenAPI webhook's body) */
export const eventSchemaOf = (type: EventType) => TreasuryEvent.extend({ type: z.literal(type), data: EVENT_TYPES[type].data });
