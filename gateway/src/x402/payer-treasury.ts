/**
 * The payer is the identity. It lands only on a treasury it stands behind: one registered with its signed
 * ownership proof, or the one its first paid call created (`paid`). A bare registration of its address is
 * never chosen.
 */
import { EMPTY_HOLDINGS } from "@treasury/core/domain/portfolio";
import { newId } from "@treasury/core/lib/ids";
import type { PaymentGateContext } from "./gate-context";

/** the treasury the payer stands behind, or a new `paid` one (wallet mode) created by this payment */
export async function payerTreasury(
  ctx: Pick<PaymentGateContext, "clock" | "stores">,
  payer: `0x${string}`,
): Promise<{ treasuryId: string; created: boolean }> {
  const owned = await ctx.stores.treasuries.findOwnedByWallet(payer);
  if (owned) return { treasuryId: owned.id, created: false };
  const now = ctx.clock.now().toISOString();
  const id = newId("trs");
  await ctx.stores.treasuries.insert({
    id,
    walletAddress: payer,
    chain: "base",
    preset: "balanced",
    executionMode: "wallet",
    status: "active",
    origin: "x402_payer",
    ownership: "paid",
    holdings: EMPTY_HOLDINGS,
    createdAt: now,
    updatedAt: now,
  });
  return { treasuryId: id, created: true };
}
