/**
 * Managed treasuries: delegations to the protection module, the engine's actions and claims, the Safe
 * transactions of managed actions and the sampled position. Each table as it is at the last version
 * (schema/history.ts).
 */
import type { TreasuryAction } from "@treasury/core/actions";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { Address, Hex } from "viem";
import { flag, integer, json, money, real, text, timestamp } from "../column";
import { Table } from "../table";

export const delegations = new Table("delegations", {
  treasury_id: text().primaryKey().references("treasuries(id)"),
  safe: text<`0x${string}`>().notNull(),
  module: text<`0x${string}`>().notNull(),
  automation: text<`0x${string}`>().notNull(),
  registered_at: timestamp().notNull(),
  first_approved_at: timestamp(),
  protect_below_health: real(),
  armed: flag().notNull().default("1"),
  // attached only with the Safe's own signature (its proof, and when); one proven delegation per Safe
  chain: text<TreasuryChain>(),
  proof: json<Record<string, unknown>>(),
  proven_at: timestamp(),
  // a newer module the Safe signed for while its current one is enabled (module, threshold, proof and time)
  pending_upgrade: json(),
});

export const protectionActions = new Table(
  "protection_actions",
  {
    id: text().primaryKey(),
    treasury_id: text().notNull().references("treasuries(id)"),
    status: text<"executed" | "skipped" | "failed">().notNull(),
    reason: text(),
    health_before: real(),
    ltv_before: real(),
    ltv_after: real(),
    repay_micro: money(),
    tx_hashes: json<string[]>(),
    gas_usd: real().notNull().default("0"),
    created_at: timestamp().notNull(),
    // the Safe acted on, whichever treasury held its delegation then
    safe: text(),
  },
  { insertionOrder: true },
);

/** a protection repayment claimed (with its transaction, before sending) so two engines never act twice on one trigger */
export const protectionClaims = new Table("protection_claims", {
  treasury_id: text().primaryKey().references("treasuries(id)"),
  holder: text().notNull(),
  state: text().notNull().oneOf(["deciding", "broadcasting"]),
  action_id: text().notNull(),
  tx_hash: text(),
  repay_micro: money(),
  detail: json(),
  claimed_at: timestamp().notNull(),
  expires_at: timestamp().notNull(),
});

/** a managed action on an operator's Safe: a Safe transaction its owners sign, the service executes (issue 15) */
export const safeTransactions = new Table("safe_transactions", {
  id: text().primaryKey(),
  treasury_id: text().notNull().references("treasuries(id)"),
  execution_id: text().notNull(),
  chain: text<TreasuryChain>().notNull(),
  safe: text<Address>().notNull(),
  action: text<TreasuryAction>().notNull(),
  amount_micro: money().notNull(),
  fee_micro: money().notNull(),
  request: json().notNull(),
  safe_tx: json().notNull(),
  safe_tx_hash: text<Hex>().notNull(),
  calls: json().notNull(),
  signatures: json().notNull(),
  status: text().notNull().oneOf(["awaiting_signatures", "executing", "executed", "failed", "expired"]),
  holder: text(),
  lease_expires_at: timestamp(),
  sent: json(),
  tx_hash: text<Hex>(),
  failure: json(),
  created_at: timestamp().notNull(),
  expires_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  // what an executed (or reverted) Safe transaction cost the automation key, for the per-Safe monthly gas budget
  gas_usd: real(),
});

/** a treasury's Aave position over time, sampled by the protection engine (the console's chart) */
export const positionSamples = new Table(
  "position_samples",
  {
    treasury_id: text().notNull().references("treasuries(id)"),
    at: timestamp().notNull(),
    ltv: real().notNull(),
    health_score: real().notNull(),
    collateral_micro: money().notNull(),
    debt_micro: money().notNull(),
  },
  { primaryKey: ["treasury_id", "at"] },
);

/**
 * The protection engines' shards of the delegations of one automation key (a treasury's shard is a hash of
 * its id modulo the engines' shard count): each held by one engine under a lease it renews every pass
 * (store/engine-shard-store.ts).
 */
export const engineShards = new Table(
  "engine_shards",
  {
    automation: text().notNull(),
    shard: integer().notNull(),
    holder: text().notNull(),
    taken_at: timestamp().notNull(),
    expires_at: timestamp().notNull(),
  },
  { primaryKey: ["automation", "shard"] },
);

/**
 * The next nonce the service gives out for an automation key on a chain: every sender of that key (protection
 * engines, the Safe executor, in any number of processes on the store) takes its nonce here, in the transaction
 * that writes the signed bytes on its claim, so no two sign at one nonce and a nonce is spent only when its bytes
 * are on record.
 */
export const automationNonces = new Table(
  "automation_nonces",
  {
    chain: text<TreasuryChain>().notNull(),
    address: text<Address>().notNull(),
    next_nonce: integer().notNull(),
    updated_at: timestamp().notNull(),
  },
  { primaryKey: ["chain", "address"] },
);
