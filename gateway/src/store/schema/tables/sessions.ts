/**
 * x402 sessions (the `batch-settlement` scheme): a payer's channel, its vouchers charged here, and their
 * redemption on chain in batches. Each table as it is at the last version (schema/history.ts).
 */
import { integer, json, money, text, timestamp } from "../column";
import { Table } from "../table";

/**
 * A channel (one per payer, receiver, token and salt; its id is the EIP-712 hash of its configuration). The
 * row holds what this service has charged on it (`charged`, the latest voucher's cumulative amount and its
 * signature) beside what the chain said last (`balance`, `total_claimed`, a pending withdrawal). A voucher is
 * charged by one conditional UPDATE (`charged` moves from the price before it to its amount), so no two
 * requests, on any instance, charge the same increment.
 */
export const x402Channels = new Table("x402_channels", {
  channel_id: text().primaryKey(),
  payer: text().notNull(),
  config: json<Record<string, unknown>>().notNull(),
  balance: money().notNull(),
  total_claimed: money().notNull(),
  charged: money().notNull(),
  // the latest voucher: its cumulative amount (= charged) and the payer's signature, what a redemption claims
  voucher_signature: text(),
  vouchers_unredeemed: integer().notNull().default("0"),
  first_unredeemed_at: timestamp(),
  withdraw_requested_at: integer().notNull().default("0"),
  synced_at: timestamp().notNull(),
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  // a redemption claimed under a lease (holder, until): one instance redeems a channel at a time
  redeem_holder: text(),
  redeem_until: timestamp(),
});

/** one batch of vouchers claimed on chain (then settled to the receiver): recorded before it is sent */
export const x402Redemptions = new Table("x402_redemptions", {
  id: text().primaryKey(),
  holder: text().notNull(),
  // [{channel_id, amount}] : each channel's cumulative amount this batch claims
  claims: json<{ channel_id: string; amount: string }[]>().notNull(),
  vouchers: integer().notNull(),
  amount: money().notNull(),
  state: text().notNull().oneOf(["claiming", "claimed", "settled", "failed"]),
  claim_tx: text(),
  settle_tx: text(),
  reason: text(),
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
});
