/**
 * The subject of a public read or preview: the demo portfolio, or the
 * sandbox treasury registered for a wallet address.
 */
import { DEMO_HOLDINGS, type Holdings } from "@treasury/core/domain/portfolio";
import { PRESETS, type Preset } from "@treasury/core/domain/presets";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";

export interface Subject {
  environment: "public_demo" | "sandbox_simulation" | "chain";
  address: string;
  holdings: Holdings;
  preset: Preset;
  treasury: TreasuryRecord | null;
}

export async function resolveSubject(ctx: ServiceContext<"treasuries">, address: string | undefined): Promise<Subject> {
  if (address === undefined || address === "demo") {
    return { environment: "public_demo", address: "demo", holdings: DEMO_HOLDINGS, preset: PRESETS.balanced, treasury: null };
  }
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) {
    throw new TreasuryError("invalid_request", "address must be 'demo' or a 0x-prefixed 20-byte address");
  }
  // only a treasury the wallet stands behind (a signed ownership proof, or its own x402 payment) answers for its address
  const treasury = await ctx.stores.treasuries.findOwnedByWallet(address);
  if (!treasury) {
    throw new TreasuryError(
      "treasury_not_found",
      `no proven treasury is registered for ${address}; register one with POST /api/v1/treasuries and an ownership_proof (a registration without one is reachable only with its API key)`,
    );
  }
  return { environment: "sandbox_simulation", address: treasury.walletAddress, holdings: treasury.holdings, preset: PRESETS[treasury.preset], treasury };
}
