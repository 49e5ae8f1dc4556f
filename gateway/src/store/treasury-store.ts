import type { PresetName } from "@treasury/core/domain/presets";
import type { Holdings } from "@treasury/core/domain/portfolio";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { Db } from "./db";
import { rowReader, type RowOf } from "./schema/table";
import { treasuries } from "./schema/tables/treasury";

type TreasuryRow = RowOf<typeof treasuries>;

export type ExecutionMode = TreasuryRow["executionMode"];
/** how the treasury came to exist */
export type TreasuryOrigin = TreasuryRow["origin"];
/**
 * What the service knows of who controls the wallet: `unproven` (a bare
 * registration: reachable only with its own API key, invisible to wallet
 * lookups), `proven` (a signed ownership statement), `paid` (created by the
 * wallet's own x402 payment, whose signature proves the wallet).
 */
export type Ownership = TreasuryRow["ownership"];

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

const read = rowReader(treasuries, { omit: ["ownership_proof"] });
/** the five balances are the record's holdings */
const fromRow = (raw: unknown): TreasuryRecord => {
  const { btcUnits, ethUnits, usdcMicro, debtMicro, usdcSuppliedMicro, createdAt, updatedAt, ...t } = read(raw);
  return {
    ...t,
    holdings: { btcUnits, ethUnits, usdcMicro, debtMicro, ...(usdcSuppliedMicro ? { suppliedUsdcMicro: usdcSuppliedMicro } : {}) },
    createdAt,
    updatedAt,
  };
};

export class TreasuryStore {
  constructor(private readonly db: Db) {}

  async insert(t: TreasuryRecord, ownershipProof: Record<string, unknown> | null = null): Promise<void> {
    await this.db.run(
      `INSERT INTO treasuries (id, wallet_address, chain, preset, execution_mode, status, origin, ownership, ownership_proof, btc_units, eth_units, usdc_micro, debt_micro, usdc_supplied_micro, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      t.id,
      t.walletAddress,
      t.chain,
      t.preset,
      t.executionMode,
      t.status,
      t.origin,
      t.ownership,
      ownershipProof ? JSON.stringify(ownershipProof) : null,
      t.holdings.btcUnits.toString(),
      t.holdings.ethUnits.toString(),
      t.holdings.usdcMicro.toString(),
      t.holdings.debtMicro.toString(),
      (t.holdings.suppliedUsdcMicro ?? 0n).toString(),
      t.createdAt,
      t.updatedAt,
    );
  }

  async get(id: string): Promise<TreasuryRecord | undefined> {
    const row = await this.db.get("SELECT * FROM treasuries WHERE id = ?", id);
    return row ? fromRow(row) : undefined;
  }

  /**
   * The treasury a wallet itself stands behind: the most recent one whose
   * ownership was proven by a signature or created by the wallet's own x402
   * payment. A bare (unproven) registration is never returned: it cannot
   * capture or shadow the wallet's traffic or public views.
   */
  async findOwnedByWallet(address: string, chain?: TreasuryChain): Promise<TreasuryRecord | undefined> {
    const row =
      chain === undefined
        ? await this.db.get(
            "SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND ownership IN ('proven','paid') ORDER BY CASE WHEN ownership = 'proven' THEN 0 ELSE 1 END, created_at DESC, rowid DESC LIMIT 1",
            address,
          )
        : await this.db.get(
            "SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND chain = ? AND ownership IN ('proven','paid') ORDER BY CASE WHEN ownership = 'proven' THEN 0 ELSE 1 END, created_at DESC, rowid DESC LIMIT 1",
            address,
            chain,
          );
    return row ? fromRow(row) : undefined;
  }

  /**
   * The managed treasury a Safe itself registered (proven by the Safe's own
   * signature), the newest. An unproven registration of someone else's Safe
   * is never returned: its holder could queue actions for the owners to sign.
   */
  async managedForWallet(address: string): Promise<TreasuryRecord | undefined> {
    const row = await this.db.get(
      "SELECT * FROM treasuries WHERE lower(wallet_address) = lower(?) AND execution_mode = 'managed' AND ownership = 'proven' ORDER BY created_at DESC, rowid DESC LIMIT 1",
      address,
    );
    return row ? fromRow(row) : undefined;
  }

  /** delete a treasury created for a request that did not go through (nothing refers to it yet) */
  async removeUnused(id: string): Promise<void> {
    await this.db.run("DELETE FROM treasury_slots WHERE treasury_id = ? AND EXISTS (SELECT 1 FROM treasuries WHERE id = ? AND origin = 'x402_payer')", id, id);
    await this.db.run(
      "DELETE FROM treasuries WHERE id = ? AND origin = 'x402_payer' AND NOT EXISTS (SELECT 1 FROM executions WHERE treasury_id = ?) AND NOT EXISTS (SELECT 1 FROM envelopes WHERE treasury_id = ?)",
      id,
      id,
      id,
    );
  }

  /** a Safe's own signature named this treasury: it is proven to stand behind it */
  async markProven(id: string): Promise<void> {
    await this.db.run("UPDATE treasuries SET ownership = 'proven' WHERE id = ? AND ownership = 'unproven'", id);
  }

  async updateHoldings(id: string, h: Holdings, at: string): Promise<void> {
    await this.db.run(
      "UPDATE treasuries SET btc_units = ?, eth_units = ?, usdc_micro = ?, debt_micro = ?, usdc_supplied_micro = ?, updated_at = ? WHERE id = ?",
      h.btcUnits.toString(),
      h.ethUnits.toString(),
      h.usdcMicro.toString(),
      h.debtMicro.toString(),
      (h.suppliedUsdcMicro ?? 0n).toString(),
      at,
      id,
    );
  }
}
