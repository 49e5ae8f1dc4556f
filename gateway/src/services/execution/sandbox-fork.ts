/**
 * Execution mode `sandbox_fork`: a managed treasury the sandbox provides for
 * (a proven wallet, an account, on a local Anvil: backing.sandboxed). The
 * action's steps run on the fork, in order, each sent from the wallet by
 * impersonation and mined before the next; a swap the fork's pool cannot fill
 * within its slippage is provided at the quote (storage writes, labelled so).
 * The chain then holds the result: the receipt takes its figures from the
 * position after, and the plan is not made again in the transaction.
 */
import { ltvPct } from "@treasury/core/domain/position";
import { aaveErrorOf, aaveRefusalOf, describeRevert, revertDataOf } from "@treasury/core/chain/revert";
import { TreasuryError } from "@treasury/core/lib/errors";
import { chainHealthScore, type ChainPosition } from "../../chain/chain-gateway";
import type { TreasuryRecord } from "../../store/treasury-store";
import { plannedSteps, type Plan } from "./planner";
import { managedOrigin, type ExecutionStrategy, type ModeDeps } from "./strategy";

export const sandboxForkMode = (deps: ModeDeps): ExecutionStrategy => ({
  mode: "sandbox_fork",
  applies: async (t, chain) => chain !== null && (await deps.backing.sandboxed(t)),
  async prepare(run) {
    const ran = await runOnFork(deps, run.before, run.planned);
    return {
      recheck: false,
      commit: async (treasury, planned, now) => {
        const plan: Plan = { ...planned, ltvAfter: ltvPct(ran.after), healthAfter: chainHealthScore(ran.after), debtAfterMicro: ran.after.debtMicro };
        const receipt = await deps.recorder.recordAction(treasury, plan, managedOrigin(run.trigger), now);
        const how = {
          simulated: false,
          chain: treasury.chain,
          how: "sandbox: each step sent from the wallet with anvil_impersonateAccount on the local fork",
          steps: ran.steps,
          block_number: Number(ran.after.blockNumber),
        };
        return { kind: "executed", result: { ...receipt, chain_execution: how } };
      },
    };
  },
});

/** the planned steps, run on the fork; what ran and the position after */
async function runOnFork(deps: ModeDeps, t: TreasuryRecord, plan: Plan): Promise<{ steps: Record<string, unknown>[]; after: ChainPosition }> {
  const { request, fee } = plan;
  const planned = plannedSteps(t, plan, deps.ctx.config.feeRecipient);
  const steps: Record<string, unknown>[] = [];
  for (const s of planned) {
    if (s.kind === "swap" && !(await deps.sandbox.wouldSucceed(t.chain, t.walletAddress, s))) {
      steps.push({ kind: s.kind, description: s.summary.description, ...(await deps.sandbox.provide(t.chain, t.walletAddress, s)) });
      continue;
    }
    const r = await deps.sandbox.sendAs(t.chain, t.walletAddress, s).catch((err: unknown) => ({ status: "error" as const, error: (err as Error).message }));
    if (r.status !== "success") {
      // the call again as an eth_call (a reverted transaction left the state as it was): its revert decoded, and
      // Aave's refusal of a borrow or of a call that would leave the position liquidatable typed
      const revert = await deps.sandbox.revertOf(t.chain, t.walletAddress, s).catch(() => undefined);
      const data = revertDataOf(revert);
      const refusal = aaveRefusalOf(data, s.data);
      const why = refusal ? `: Aave refuses it, ${refusal.why} (${refusal.aaveError})` : "";
      throw new TreasuryError(
        refusal?.code ?? "sandbox_execution_failed",
        `the ${s.kind} step (${s.summary.description}) did not execute on the local fork${why}; the steps before it did: nothing was recorded`,
        {
          executed_steps: steps,
          failed_step: {
            kind: s.kind,
            ...("hash" in r ? { tx_hash: r.hash } : { error: r.error }),
            ...(revert === undefined ? {} : { revert_reason: describeRevert(revert) }),
            ...(aaveErrorOf(data) ? { aave_error: aaveErrorOf(data)!.name } : {}),
          },
        },
      );
    }
    steps.push({
      kind: s.kind,
      description: s.summary.description,
      tx_hash: r.hash,
      block_number: Number(r.blockNumber),
      gas_used: Number(r.gasUsed),
      status: "mined",
    });
  }
  return { steps, after: await deps.chain.position(t.chain, t.walletAddress) };
}
