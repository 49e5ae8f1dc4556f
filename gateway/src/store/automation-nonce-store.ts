/**
 * The nonces of the service's automation keys, given out by the store (schema version 16, automation_nonces):
 * every sender of a key (protection engines, the Safe executor, in any number of processes on one store) takes
 * its nonce here instead of asking the node for its pending count, so two senders of one key never sign at one
 * nonce, and none waits for another's transaction to be mined before it signs its own.
 *
 * `allocate` runs inside the caller's store transaction, the one that writes the signed bytes on the caller's
 * claim: a nonce is spent only when its bytes are on record (a rolled-back claim gives its nonce back). The
 * node's pending count is a floor (`chainPendingHint`): a transaction the key sent outside the store (by hand,
 * by a tool) moves the service past it.
 */
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { Db } from "./db";

export class AutomationNonceStore {
  constructor(private readonly db: Db) {}

  /** the nonce to sign at: max(what the store gave out next, the node's pending count); the next one is one past it */
  async allocate(chain: TreasuryChain, address: `0x${string}`, chainPendingHint: number, now: Date = new Date()): Promise<number> {
    // one statement: concurrent allocations serialize on the row (SQLite's write lock, PostgreSQL's row lock)
    const row = await this.db.get<{ next_nonce: number | string }>(
      `INSERT INTO automation_nonces (chain, address, next_nonce, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (chain, address) DO UPDATE SET
         next_nonce = CASE WHEN automation_nonces.next_nonce + 1 > excluded.next_nonce THEN automation_nonces.next_nonce + 1 ELSE excluded.next_nonce END,
         updated_at = excluded.updated_at
       RETURNING next_nonce`,
      chain,
      address.toLowerCase(),
      chainPendingHint + 1,
      now.toISOString(),
    );
    return Number(row!.next_nonce) - 1;
  }

  /** the nonce the store gives out next for the key (undefined before its first allocation) */
  async peek(chain: TreasuryChain, address: `0x${string}`): Promise<number | undefined> {
    const row = await this.db.get<{ next_nonce: number | string }>(
      "SELECT next_nonce FROM automation_nonces WHERE chain = ? AND address = ?",
      chain,
      address.toLowerCase(),
    );
    return row ? Number(row.next_nonce) : undefined;
  }
}
