/**
 * One trigger of one Safe, decided and acted on apart from the watch (engine.ts starts it and does not wait):
 * claim the trigger (store/protection-claim-store.ts: the claim disarms it, so of any number of engines one
 * acts), plan the repayment (repayment-plan.ts), send its calls (claim-transactions.ts: each signed at a nonce
 * the store allocates and written on the claim in one store transaction, then broadcast), wait for them to land
 * (replacing a stuck one with the same nonce and a higher fee) and end the claim (trigger-outcome.ts). A dead
 * engine's claim is resumed: its signed transactions are sent again (the same bytes, so at most once on chain)
 * and their receipts read before anything new is decided.
 */
import { ltvPct } from "@treasury/core/domain/position";
import { newId } from "@treasury/core/lib/ids";
import { chainHealthScore } from "../chain/chain-gateway";
import type { DelegationService } from "../services/delegation-service";
import type { DelegationRecord } from "../store/delegation-store";
import { awaitLanded, landCall } from "./claim-transactions";
import { LostClaim } from "./lost-claim";
import { moduleCall, moduleRevertReason } from "./module-calls";
import { isPlan, planRepayment, type GasSettings, type Plan } from "./repayment-plan";
import { failTrigger, finishTrigger, releaseTrigger } from "./trigger-outcome";
import type { EngineParts, Run, TickResult } from "./trigger-run";

export class TriggerActor {
  constructor(
    private readonly parts: EngineParts,
    private readonly settings: GasSettings,
    private readonly delegations: DelegationService,
    /** the engine's name on the claims it holds */
    private readonly holder: string,
  ) {}

  /** decide and act on `delegation`'s trigger: its position is read afresh (the watch only said it may be crossed) */
  async act(delegation: DelegationRecord, threshold: number): Promise<TickResult> {
    const { ctx, chain } = this.parts;
    let d = delegation;
    const t = await ctx.stores.treasuries.get(d.treasuryId);
    if (!t || !chain.connected(t.chain)) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "no treasury or no RPC" };
    if (d.pendingUpgrade) {
      // a staged upgrade the Safe enabled is promoted by this read: act through the module now in force
      const state = await this.delegations.state(t);
      if (state !== "active") return { treasuryId: d.treasuryId, outcome: "not_active", detail: state };
      d = (await ctx.stores.delegations.get(d.treasuryId)) ?? d;
    }
    const position = await chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    const open = await ctx.stores.protectionClaims.get(d.treasuryId);
    let plan: Plan | TickResult | undefined;
    if (!open) {
      if (health >= threshold) {
        if (!d.armed) await ctx.stores.delegations.setArmed(d.treasuryId, true);
        return { treasuryId: d.treasuryId, outcome: "healthy", detail: `health ${health}` };
      }
      if (!d.armed) return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };
      // everything that costs nothing is checked before the trigger is claimed
      plan = await planRepayment(this.parts, this.settings, d, t.chain, position, health);
      if (!isPlan(plan)) return plan;
    }

    // one trigger, one action: the claim disarms it in the same transaction, for every engine at once
    const claimed = await ctx.stores.protectionClaims.claim(d.treasuryId, this.holder, newId("fee"), ctx.clock.now());
    if (claimed.kind === "held") return { treasuryId: d.treasuryId, outcome: "in_progress", detail: "another engine is acting on this trigger" };
    if (claimed.kind === "disarmed")
      return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };
    const claim = claimed.claim;
    const run: Run = { d, t, threshold, claim, gasWei: 0n, receipts: new Map(), sentAt: new Map() };
    try {
      if (claimed.kind === "taken_over") return await this.resume(run);
      // planned before the claim: another engine may have acted in between (and re-armed the trigger it restored)
      if (plan && chainHealthScore(await chain.position(t.chain, d.safe)) >= threshold) {
        return await releaseTrigger(this.parts, run, {
          treasuryId: d.treasuryId,
          outcome: "healthy",
          detail: "restored by another engine's action before this one's claim",
        });
      }
      claim.healthBefore = health;
      claim.ltvBefore = ltvPct(position);
      plan ??= await planRepayment(this.parts, this.settings, d, t.chain, position, health);
      if (!isPlan(plan)) return await releaseTrigger(this.parts, run, plan);
      return await this.execute(run, plan);
    } catch (err) {
      if (err instanceof LostClaim) return { treasuryId: d.treasuryId, outcome: "in_progress", detail: err.message };
      // the claim stays: what was sent is on record, and the next pass (or another engine, once the lease lapses) settles it
      throw err;
    }
  }

  /** send the plan's calls, each simulated first (a refusal by the module costs no gas and is recorded decoded) */
  private async execute(run: Run, plan: Plan): Promise<TickResult> {
    const { ctx, chain, automation } = this.parts;
    const { d, t, claim } = run;
    claim.repayMicro = plan.repay;
    claim.plan = plan.about;
    if (!(await ctx.stores.protectionClaims.record(claim, ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
    const client = chain.client(t.chain);
    for (const c of plan.calls) {
      try {
        await client.simulateContract({ account: automation, address: d.module, ...moduleCall(c) });
      } catch (err) {
        return failTrigger(this.parts, run, plan.ethPrice, `refused before sending: ${moduleRevertReason(err)}`);
      }
      // signed at the store's nonce and written on the claim, sent, then its receipt (replaced while it stays pending)
      const receipt = await landCall(this.parts, run, c, plan.fees);
      if (receipt.status !== "success") {
        // why: the same call replayed on the state its block started from
        const why = await client
          .simulateContract({ account: automation, address: d.module, ...moduleCall(c), blockNumber: receipt.blockNumber - 1n, gas: c.gas })
          .then(() => "not reproduced on the block before")
          .catch((err: unknown) => moduleRevertReason(err));
        return failTrigger(this.parts, run, plan.ethPrice, `reverted: ${receipt.transactionHash} (${why})`);
      }
    }
    return finishTrigger(this.parts, run, plan.ethPrice);
  }

  /**
   * A dead engine's claim: its signed transactions are sent again (the same bytes, so at most once on chain) and
   * their receipts read. A repayment that landed is recorded as the trigger's action; otherwise the trigger is
   * decided afresh on the position as it is now.
   */
  private async resume(run: Run): Promise<TickResult> {
    const { chain } = this.parts;
    const { d, t, claim } = run;
    const ethPrice = await chain.ethPrice(t.chain);
    // one wait per nonce: the receipt of whichever of its variants (a replacement at a higher fee) landed
    for (const sent of claim.sent.filter((s, i, all) => all.findIndex((o) => o.nonce === s.nonce) === i)) await awaitLanded(this.parts, run, sent);
    const repaid = claim.sent.some((s) => (s.call === "repay" || s.call === "deleverage") && run.receipts.get(s.hash)?.status === "success");
    if (repaid) return finishTrigger(this.parts, run, ethPrice);
    const position = await chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    if (health >= run.threshold) return failTrigger(this.parts, run, ethPrice, "superseded: the position recovered before the repayment landed");
    claim.healthBefore ??= health;
    claim.ltvBefore ??= ltvPct(position);
    const plan = await planRepayment(this.parts, this.settings, d, t.chain, position, health);
    if (!isPlan(plan)) return releaseTrigger(this.parts, run, plan);
    return this.execute(run, plan);
  }
}
