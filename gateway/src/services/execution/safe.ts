/**
 * Execution mode `safe`: a managed action on an operator's Safe (issue 15).
 * The action's calls become one Safe transaction at the Safe's nonce now, for
 * its owners to sign (services/safe-transaction-service.ts), executed by the
 * service's executor once signed (protection/safe-executor.ts). Only the
 * Safe's own registration queues one (checked again in the transaction). Its
 * receipt is recorded now with the spec's status (`processing`, a borrow
 * `approved`: it has not happened yet); its fee is audited only when it executes.
 */
import { formatDecimal } from "@treasury/core/domain/money";
import { declarationOf } from "@treasury/core/actions";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { newId } from "@treasury/core/lib/ids";
import { safeTxFor, safeTxHash } from "../../chain/safe-transaction";
import type { TreasuryRecord } from "../../store/treasury-store";
import { actionReceipt } from "../execution-recorder";
import { SAFE_TX_TTL_MS, safeTransactionRef } from "../safe-transaction-service";
import { plannedSteps, type Plan } from "./planner";
import { managedOrigin, type ExecutionStrategy, type ModeDeps } from "./strategy";

export const safeMode = (deps: ModeDeps): ExecutionStrategy => ({
  mode: "safe",
  applies: async (t, chain) => chain !== null && (await deps.backing.isContract(t)),
  async prepare(run) {
    const nonce = await deps.chain.safeNonce(run.before.chain, run.before.walletAddress);
    return {
      recheck: true,
      commit: async (treasury, plan, now) => {
        await deps.backing.refuseUnlessSafesOwn(treasury);
        return { kind: "queued_on_safe", result: await propose(deps, treasury, plan, run.trigger, now, nonce) };
      },
    };
  },
});

/** the Safe transaction stored awaiting signatures, and the action's receipt recorded (its fee is not audited yet) */
async function propose(deps: ModeDeps, t: TreasuryRecord, plan: Plan, trigger: string, now: Date, nonce: bigint): Promise<Record<string, unknown>> {
  const { ctx, recorder } = deps;
  const { request, fee } = plan;
  const planned = plannedSteps(t, plan, ctx.config.feeRecipient);
  const chainId = AAVE_MARKETS[t.chain].chainId;
  const safeTx = safeTxFor(chainId, planned, nonce);
  const hash = safeTxHash(chainId, t.walletAddress, safeTx);
  const id = newId("stx");
  const pending = safeTransactionRef(ctx.links, id, hash, "awaiting_signatures");
  const expiresAt = new Date(now.getTime() + SAFE_TX_TTL_MS).toISOString();
  const { executionId, receipt } = await recorder.recordReceipt({
    treasury: t,
    action: request.action,
    amountMicro: request.amountMicro,
    fee,
    ...managedOrigin(trigger),
    executionId: newId(declarationOf(request.action).idPrefix),
    receipt: (eid) => ({ ...actionReceipt(eid, plan, now.toISOString()), status: declarationOf(request.action).proposedStatus, safe_transaction: pending }),
    at: now,
  });
  await ctx.stores.safeTransactions.insert({
    id,
    treasuryId: t.id,
    executionId,
    chain: t.chain,
    safe: t.walletAddress,
    action: request.action,
    amountMicro: request.amountMicro,
    feeMicro: fee.feeMicro,
    request: { params: request.params as Record<string, unknown>, feeBps: Number(fee.feeBps), feeBasis: fee.basis, trigger },
    safeTx,
    safeTxHash: hash,
    calls: planned.map((p) => ({ kind: p.kind, to: p.to, value: p.value, data: p.data, summary: p.summary as unknown as Record<string, unknown> })),
    signatures: [],
    status: "awaiting_signatures",
    holder: null,
    leaseExpiresAt: null,
    sent: null,
    txHash: null,
    failure: null,
    gasUsd: null,
    createdAt: now.toISOString(),
    expiresAt,
    updatedAt: now.toISOString(),
  });
  await ctx.stores.events.append(
    t.id,
    "safe_transaction.awaiting_signatures",
    {
      safe_transaction_id: id,
      safe: t.walletAddress,
      action: request.action,
      amount_usdc: formatDecimal(request.amountMicro, 6),
      safe_tx_hash: hash,
      expires_at: expiresAt,
    },
    { now },
  );
  return {
    ...receipt,
    chain_execution: {
      simulated: false,
      chain: t.chain,
      how: `a Safe transaction of ${planned.length} call${planned.length === 1 ? "" : "s"} for the Safe's owners to sign until ${expiresAt}; the service executes it once the Safe's threshold signed, after checking the safety rail again against the position at that moment`,
      safe_transaction: pending,
    },
  };
}
