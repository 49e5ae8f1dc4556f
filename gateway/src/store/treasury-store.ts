import type { PresetName } from "../domain/presets";
import type { Holdings } from "../domain/portfolio";
import type { TreasuryChain } from "../../../contracts-abi/chains";
import type { Db } from "./db";

export type ExecutionMode = "wallet" | "managed";
/** how the treasury came to exist */
export type TreasuryOrigin = "registration" | "sandbox_key" | "x402_payer" | "operator";
/**
 * What the service knows of who controls the wallet: `unproven` (a bare
 * registration: reachable only with its own API key, invisible to wallet
 * lookups), `proven` (a signed ownership statement), `paid` (created by the
 * wallet's own x402 payment, whose signature proves the wallet).
 */
export type Ownership = "unproven" | "proven" | "paid";

export interface TreasuryRecord {
  id: string;
  walletAddress: `0x${string}`;
  chain: TreasuryChain;
  preset: PresetName;
  executionMode: ExecutionMode;
  status: string;
  origin: TreasuryOrigin;
  ownership: Ownership;
  holdings: Holdings;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  wallet_address: string;
  chain: TreasuryChain;
  preset: PresetName;
  execution_mode: ExecutionMode;
  status: string;
  origin: TreasuryOrigin;
  ownership: Ownership;
  btc_units: string;
  eth_units: string;
  usdc_micro: string;
  debt_micro: string;
  created_at: string;
  updated_at: string;
}

const fromRow = (r: Row): TreasuryRecord => ({
  id: r.id,
  walletAddress: r.wallet_address as `0x${string}`,
  chain: r.chain,
  preset: r.preset,
  executionMode: r.execution_mode,
  status: r.status,
  origin: r.origin,
  ownership: r.ownership,
  holdings: {
    btcUnits: BigInt(r.btc_units),
    ethUnits: BigInt(r.eth_units),
    usdcMicro: BigInt(r.usdc_micro),
    debtMicro: BigInt(r.debt_micro),
  },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class TreasuryStore {
  constructor(private readonly db: Db) {}

  async insert(t: TreasuryRecord, ownershipProof: Record<string, unknown> | null = null): Promise<void> {
    await this.db.run(
      `INSERT INTO treasuries (id, wallet_address, chain, preset, execution_mode, status, origin, ownership, ownership_proof, btc_units, eth_units, usdc_micro, debt_micro, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      t.id, t.walletAddress, t.chain, t.preset, t.executionMode, t.status, t.origin, t.ownership, ownershipProof ? JSON.stringify(ownershipProof) : null,
      t.holdings.btcUnits.toString(), t.holdings.ethUnits.toString(), t.holdings.usdcMicro.toString(), t.holdings.debtMicro.toString(), t.createdAt, t.updatedAt,
    );
  }

  async get(id: string): Promise<TreasuryRecord | undefined> {
    const row = await this.db.get("SELECT * FROM treasuries WHERE id = ?", id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /**
   * The treasury a wallet itself stands behind: the most recent one whose
   * ownership was proven by a signature or created by the wallet's own x402
   * payment. A bare (unproven) registration is never returned: it cannot
   * capture or shadow the wallet's traffic or public views.
   */
  async findOwnedByWallet(address: string, chain?: TreasuryChain): Promise<TreasuryRecord | undefined> {
    const row = (chain === undefined
      ? await this.db.get("SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND ownership IN ('proven','paid') ORDER BY CASE WHEN ownership = 'proven' THEN 0 ELSE 1 END, created_at DESC, rowid DESC LIMIT 1", address)
      : await this.db.get("SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND chain = ? AND ownership IN ('proven','paid') ORDER BY CASE WHEN ownership = 'proven' THEN 0 ELSE 1 END, created_at DESC, rowid DESC LIMIT 1", address, chain)) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /**
   * The managed treasury a Safe itself registered (proven by the Safe's own
   * signature), the newest. An unproven registration of someone else's Safe
   * is never returned: its holder could queue actions for the owners to sign.
   */
  async managedForWallet(address: string): Promise<TreasuryRecord | undefined> {
    const row = await this.db.get("SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND execution_mode = 'managed' AND ownership = 'proven' ORDER BY created_at DESC, rowid DESC LIMIT 1", address) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** delete a treasury created for a request that did not go through (nothing refers to it yet) */
  async removeUnused(id: string): Promise<void> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND EXISTS (SELECT 1 FROM treasuries WHERE id = ? AND origin = 'x402_payer')", id, id);
    await this.db.run("DELETE FROM treasuries WHERE id = ? AND origin = 'x402_payer' AND NOT EXISTS (SELECT 1 FROM executions WHERE treasury_id = ?) AND NOT EXISTS (SELECT 1 FROM envelopes WHERE treasury_id = ?)", id, id, id);
  }

  /** a Safe's own signature named this treasury: it is proven to stand behind it */
  async markProven(id: string): Promise<void> {
    await this.db.run("UPDATE treasuries SET ownership = 'proven' WHERE id = ? AND ownership = 'unproven'", id);
  }

  async updateHoldings(id: string, h: Holdings, at: string): Promise<void> {
    await this.db.run("UPDATE treasuries SET btc_units = ?, eth_units = ?, usdc_micro = ?, debt_micro = ?, updated_at = ? WHERE id = ?", h.btcUnits.toString(), h.ethUnits.toString(), h.usdcMicro.toString(), h.debtMicro.toString(), at, id);
  }
}
