import type { PresetName } from "../domain/presets";
import type { Holdings } from "../domain/portfolio";
import type { Db } from "./db";

export type Chain = "arbitrum" | "base";
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
  chain: Chain;
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
  chain: Chain;
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

  insert(t: TreasuryRecord, ownershipProof: Record<string, unknown> | null = null): void {
    this.db
      .prepare(
        `INSERT INTO treasuries (id, wallet_address, chain, preset, execution_mode, status, origin, ownership, ownership_proof, btc_units, eth_units, usdc_micro, debt_micro, created_at, updated_at)
         VALUES (@id, @wallet_address, @chain, @preset, @execution_mode, @status, @origin, @ownership, @ownership_proof, @btc_units, @eth_units, @usdc_micro, @debt_micro, @created_at, @updated_at)`,
      )
      .run({
        id: t.id,
        wallet_address: t.walletAddress,
        chain: t.chain,
        preset: t.preset,
        execution_mode: t.executionMode,
        status: t.status,
        origin: t.origin,
        ownership: t.ownership,
        ownership_proof: ownershipProof ? JSON.stringify(ownershipProof) : null,
        btc_units: t.holdings.btcUnits.toString(),
        eth_units: t.holdings.ethUnits.toString(),
        usdc_micro: t.holdings.usdcMicro.toString(),
        debt_micro: t.holdings.debtMicro.toString(),
        created_at: t.createdAt,
        updated_at: t.updatedAt,
      });
  }

  get(id: string): TreasuryRecord | undefined {
    const row = this.db.prepare("SELECT * FROM treasuries WHERE id = ?").get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /**
   * The treasury a wallet itself stands behind: the most recent one whose
   * ownership was proven by a signature or created by the wallet's own x402
   * payment. A bare (unproven) registration is never returned: it cannot
   * capture or shadow the wallet's traffic or public views.
   */
  findOwnedByWallet(address: string): TreasuryRecord | undefined {
    const row = this.db
      .prepare("SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND ownership IN ('proven','paid') ORDER BY ownership = 'proven' DESC, created_at DESC, rowid DESC LIMIT 1")
      .get(address) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** delete a treasury created for a request that did not go through (nothing refers to it yet) */
  removeUnused(id: string): void {
    this.db.prepare("DELETE FROM treasury_slots WHERE treasury_id = ? AND EXISTS (SELECT 1 FROM treasuries WHERE id = ? AND origin = 'x402_payer')").run(id, id);
    this.db
      .prepare(
        "DELETE FROM treasuries WHERE id = ? AND origin = 'x402_payer' AND NOT EXISTS (SELECT 1 FROM executions WHERE treasury_id = ?) AND NOT EXISTS (SELECT 1 FROM envelopes WHERE treasury_id = ?)",
      )
      .run(id, id, id);
  }

  updateHoldings(id: string, h: Holdings, at: string): void {
    this.db
      .prepare("UPDATE treasuries SET btc_units = ?, eth_units = ?, usdc_micro = ?, debt_micro = ?, updated_at = ? WHERE id = ?")
      .run(h.btcUnits.toString(), h.ethUnits.toString(), h.usdcMicro.toString(), h.debtMicro.toString(), at, id);
  }
}
