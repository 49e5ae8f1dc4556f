/**
 * How a trigger's claim ends, each in one database transaction fenced by the claim's holder (an engine that
 * lost the claim records nothing; its successor does):
 * - finished: the repayment landed; its action (executed), its fee audit entry (fee 0, trigger `protection` for a
 *   repayment from USDC, `auto_deleverage` for a sale of collateral) and the end of the claim; re-armed when the
 *   position is restored, or after a partial deleverage that moved it;
 * - failed: recorded with its reason, the trigger re-armed (retried on a later pass within the gas caps);
 * - released: nothing was sent and nothing can be (already recorded as skipped), the trigger re-armed.
 * A skip, decided before any claim, is recorded on its own.
 */
import { parseEventLogs, type Hex } from "viem";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { feeFor } from "@treasury/core/domain/fees";
import { formatDecimal } from "@treasury/core/domain/money";
import { ltvPct } from "@treasury/core/domain/position";
import { newId } from "@treasury/core/lib/ids";
import { chainHealthScore, usdOfWei } from "../chain/chain-gateway";
import type { DelegationRecord } from "../store/delegation-store";
import { LostClaim } from "./lost-claim";
import type { EngineContext, EngineParts, Run, TickResult } from "./trigger-run";

/** the trigger's repayment landed: its action and audit entry, and the end of the claim, in one transaction */
export async function finishTrigger({ ctx, chain, recorder }: EngineParts, run: Run, ethPrice: bigint): Promise<TickResult> {
  const { d, t, claim } = run;
  const after = await chain.position(t.chain, d.safe);
  const now = ctx.clock.now();
  // a deleverage repaid what its sale brought less the flash premium (the module's Deleveraged event says both)
  const sale = [...run.receipts.values()]
    .flatMap((r) =>
      parseEventLogs({
        abi: PROTECTION_MODULE_ABI,
        logs: r.logs.filter((l) => l.address.toLowerCase() === d.module.toLowerCase()),
        eventName: "Deleveraged",
      }),
    )
    .at(-1);
  const repay = sale ? sale.args.usdcReceived - sale.args.flashPremium : (claim.repayMicro ?? 0n);
  const deleverage = claim.plan?.source === "collateral";
  const action = deleverage ? "auto_deleverage" : "protection";
  const note = claim.plan && deleverage ? claim.plan.note : null;
  await ctx.tx.transaction(async () => {
    await endClaim(ctx, run, ethPrice, { status: "executed", reason: note, ltvAfter: ltvPct(after), repayMicro: repay, createdAt: now });
    await recorder.record({
      treasury: t,
      action,
      amountMicro: repay,
      fee: feeFor("none", repay),
      origin: "protection",
      envelopeTxId: null,
      trigger: action,
      settled: true,
      executionId: claim.actionId,
      at: now,
    });
    // re-armed once the action restored the position, or after a partial deleverage that moved it (the next act
    // continues toward the park target); an action that did neither is not repeated for the same trigger
    const moved = claim.ltvBefore !== null && ltvPct(after) < claim.ltvBefore;
    if (chainHealthScore(after) >= run.threshold || (claim.plan?.partial === true && moved)) await ctx.stores.delegations.setArmed(d.treasuryId, true);
  });
  return {
    treasuryId: d.treasuryId,
    outcome: "executed",
    detail: `repaid ${formatDecimal(repay, 6)} USDC${note ? ` (${note})` : ""}, LTV ${claim.ltvBefore}% -> ${ltvPct(after)}%`,
  };
}

/**
 * Inside the caller's transaction: the claim ended, fenced (an engine that lost it records nothing: its successor
 * does), and its action recorded on the Safe with what landed and what it cost.
 */
async function endClaim(
  ctx: EngineParts["ctx"],
  run: Run,
  ethPrice: bigint,
  end: { status: "executed" | "failed"; reason: string | null; ltvAfter: number | null; repayMicro: bigint | null; createdAt: Date },
): Promise<void> {
  const { d, claim } = run;
  if (!(await ctx.stores.protectionClaims.finish(claim.treasuryId, claim.holder))) throw new LostClaim("this trigger", "engine");
  const trigger = { health_before: claim.healthBefore, ltv_before: claim.ltvBefore };
  // the record's event, in the transaction that writes the record
  if (end.status === "executed") {
    await ctx.stores.events.append(
      d.treasuryId,
      "protection.acted",
      {
        action_id: claim.actionId,
        safe: d.safe,
        trigger,
        repaid_usdc: end.repayMicro === null ? null : formatDecimal(end.repayMicro, 6),
        ltv_after: end.ltvAfter,
        tx_hashes: landedHashes(run),
        gas_usd: gasUsd(run, ethPrice),
      },
      { now: end.createdAt },
    );
  } else {
    await ctx.stores.events.append(
      d.treasuryId,
      "protection.failed",
      { action_id: claim.actionId, safe: d.safe, reason: end.reason ?? "failed", trigger },
      { now: end.createdAt },
    );
  }
  await ctx.stores.delegations.recordAction({
    id: claim.actionId,
    treasuryId: d.treasuryId,
    safe: d.safe,
    status: end.status,
    reason: end.reason,
    healthBefore: claim.healthBefore,
    ltvBefore: claim.ltvBefore,
    ltvAfter: end.ltvAfter,
    repayMicro: end.repayMicro,
    txHashes: landedHashes(run),
    gasUsd: gasUsd(run, ethPrice),
    createdAt: end.createdAt.toISOString(),
  });
}

/** the action failed: recorded with its reason, the claim ended and the trigger re-armed (retried within the gas caps) */
export async function failTrigger({ ctx }: EngineParts, run: Run, ethPrice: bigint, reason: string): Promise<TickResult> {
  const { d, claim } = run;
  await ctx.tx.transaction(async () => {
    await endClaim(ctx, run, ethPrice, { status: "failed", reason, ltvAfter: null, repayMicro: claim.repayMicro, createdAt: ctx.clock.now() });
    await ctx.stores.delegations.setArmed(d.treasuryId, true);
  });
  return { treasuryId: d.treasuryId, outcome: "failed", detail: reason };
}

/** nothing was sent for this claim and nothing can be (already recorded as skipped): end it and re-arm */
export async function releaseTrigger({ ctx }: EngineParts, run: Run, result: TickResult): Promise<TickResult> {
  await ctx.tx.transaction(async () => {
    if (!(await ctx.stores.protectionClaims.finish(run.claim.treasuryId, run.claim.holder))) throw new LostClaim("this trigger", "engine");
    await ctx.stores.delegations.setArmed(run.d.treasuryId, true);
  });
  return result;
}

/** nothing can be done for this trigger (no source, over a gas cap): recorded as skipped, nothing sent */
export async function recordSkip(ctx: EngineContext, d: DelegationRecord, health: number, ltv: number, reason: string): Promise<TickResult> {
  await ctx.stores.delegations.recordAction({
    id: newId("fee"),
    treasuryId: d.treasuryId,
    safe: d.safe,
    status: "skipped",
    reason,
    healthBefore: health,
    ltvBefore: ltv,
    ltvAfter: null,
    repayMicro: null,
    txHashes: [],
    gasUsd: 0,
    createdAt: ctx.clock.now().toISOString(),
  });
  return { treasuryId: d.treasuryId, outcome: "skipped", detail: reason };
}

/** the transactions of this claim that are on chain (a dropped one, whose nonce went elsewhere, is not) */
function landedHashes(run: Run): Hex[] {
  return run.claim.sent.filter((s) => run.receipts.has(s.hash)).map((s) => s.hash);
}

function gasUsd(run: Run, ethPrice: bigint): number {
  return usdOfWei(run.gasWei, ethPrice);
}
