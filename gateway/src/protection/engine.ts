/**
 * The protection engine: watches managed treasuries' Aave positions on their
 * chain and, when the health score falls below the protect threshold (1.3 by
 * default, tighter per treasury), repays toward the park target through the
 * Safe's ProtectionModule with the service's automation key: from the Safe's
 * idle USDC, else its supplied USDC, else its collateral sold in one
 * transaction (the module's deleverage, planned by packages/core/src/domain/deleverage.ts and
 * sized on the pool's QuoterV2 quote, with Aave flash liquidity near the
 * threshold; partial when the pool's depth within the module's bound cannot
 * reach the target in one act).
 *
 * - never acts without active delegation (state derived from the chain);
 * - once per trigger: it claims the trigger (store/protection-claim-store.ts)
 *   in the transaction that disarms it, so of any number of engines on one
 *   store one acts; it re-arms when it sees the health score back above
 *   the threshold (normally right after the repayment) or after a partial
 *   deleverage that moved the position, so an action that did neither is not
 *   repeated for the same fall;
 * - crash-safe: every transaction is signed, written on the claim (hash and
 *   bytes), then sent; an engine that takes over a dead engine's expired
 *   claim re-sends those bytes, reads their receipts and records the action
 *   that landed, once, before deciding anything new;
 * - gas caps (spec 2.12): the automation key pays the gas, so the estimated
 *   cost (gas x max fee x the oracle's ETH price) must stay within 0.25 USD per
 *   action and 5 USD per month per treasury, an off-chain budget;
 * - every action is recorded in the fee audit trail with fee 0 (downward legs
 *   are free) and trigger `protection` (a repayment from USDC) or
 *   `auto_deleverage` (a sale of collateral), through the one execution recorder;
 * - only delegations attached with the Safe's own signature are acted on, and
 *   actions are recorded on the treasury the Safe named (its owner's);
 * - the repayment is rounded toward the module's safe side
 *   (packages/core/src/domain/delegation.ts); each call is simulated first, and a refused or
 *   reverted one is recorded with its decoded reason and retried on a later
 *   pass while the gas caps allow.
 *
 * Here: the pass and the trigger decision (claim, act, or resume a dead engine's claim). Beside it: the plan
 * and its gas caps (repayment-plan.ts), the transactions written on the claim (claim-transactions.ts), how a
 * claim ends (trigger-outcome.ts), what they share (trigger-run.ts).
 */
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { ltvPct } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";
import { newId } from "@treasury/core/lib/ids";
import { ChainGateway, chainHealthScore } from "../chain/chain-gateway";
import { DelegationService } from "../services/delegation-service";
import { ExecutionRecorder } from "../services/execution-recorder";
import type { DelegationRecord } from "../store/delegation-store";
import { awaitLanded, landCall } from "./claim-transactions";
import { LostClaim } from "./lost-claim";
import { moduleCall, moduleRevertReason } from "./module-calls";
import { isPlan, planRepayment, type GasSettings, type Plan } from "./repayment-plan";
import { failTrigger, finishTrigger, releaseTrigger } from "./trigger-outcome";
import type { EngineContext, EngineParts, Run, TickResult } from "./trigger-run";

export type { TickResult } from "./trigger-run";

export class ProtectionEngine {
  private readonly chain: ChainGateway;
  private readonly delegations: DelegationService;
  /** what the engine's stages (plan, send, outcome) share */
  private readonly parts: EngineParts;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** this engine's name on the claims it holds */
  private readonly holder = newId("eng");

  constructor(
    private readonly ctx: EngineContext,
    private readonly opts: GasSettings & {
      rpcUrls: Partial<Record<TreasuryChain, string>>;
      automationKey: Hex;
    },
  ) {
    this.chain = new ChainGateway(opts.rpcUrls, 10_000);
    this.delegations = new DelegationService(ctx, this.chain);
    this.parts = { ctx, chain: this.chain, recorder: new ExecutionRecorder(ctx), automation: privateKeyToAccount(opts.automationKey) };
  }

  get address(): `0x${string}` {
    return this.parts.automation.address;
  }

  /** one pass over every delegation; returns what happened to each */
  async tick(): Promise<TickResult[]> {
    if (this.running) return [];
    this.running = true;
    try {
      // the gateway's auto_repay_active reads this: an engine with this key is watching
      await this.ctx.stores.instances.beatEngine(this.address, this.ctx.clock.now());
      const results: TickResult[] = [];
      for (const d of await this.ctx.stores.delegations.allProven()) {
        try {
          results.push(await this.protect(d));
        } catch (err) {
          results.push({ treasuryId: d.treasuryId, outcome: "failed", detail: err instanceof Error ? err.message.split("\n")[0] : String(err) });
        }
      }
      return results;
    } finally {
      this.running = false;
    }
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.tick(), intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async protect(delegation: DelegationRecord): Promise<TickResult> {
    let d = delegation;
    const t = await this.ctx.stores.treasuries.get(d.treasuryId);
    if (!t || !this.chain.connected(t.chain)) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "no treasury or no RPC" };
    if (d.automation.toLowerCase() !== this.address.toLowerCase()) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "another automation key" };
    const state = await this.delegations.state(t);
    if (state !== "active") return { treasuryId: d.treasuryId, outcome: "not_active", detail: state };
    // a staged upgrade the Safe enabled was promoted by that read: act through the module now in force
    if (d.pendingUpgrade) d = (await this.ctx.stores.delegations.get(d.treasuryId)) ?? d;

    const threshold = d.protectBelowHealth ?? PRESETS[t.preset].protectBelowHealthScore;
    const position = await this.chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    // the position over time (the console's chart): one sample a minute, or at once when the LTV moved
    await this.ctx.stores.positionSamples.sample(d.treasuryId, {
      at: this.ctx.clock.now().toISOString(),
      ltv: ltvPct(position),
      healthScore: health,
      collateralMicro: position.collateralMicro,
      debtMicro: position.debtMicro,
    });
    const open = await this.ctx.stores.protectionClaims.get(d.treasuryId);
    let plan: Plan | TickResult | undefined;
    if (!open) {
      if (health >= threshold) {
        if (!d.armed) await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
        return { treasuryId: d.treasuryId, outcome: "healthy", detail: `health ${health}` };
      }
      if (!d.armed) return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };
      // everything that costs nothing is checked before the trigger is claimed
      plan = await planRepayment(this.parts, this.opts, d, t.chain, position, health);
      if (!isPlan(plan)) return plan;
    }

    // one trigger, one action: the claim disarms it in the same transaction, for every engine at once
    const claimed = await this.ctx.stores.protectionClaims.claim(d.treasuryId, this.holder, newId("fee"), this.ctx.clock.now());
    if (claimed.kind === "held") return { treasuryId: d.treasuryId, outcome: "in_progress", detail: "another engine is acting on this trigger" };
    if (claimed.kind === "disarmed")
      return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };
    const claim = claimed.claim;
    const run: Run = { d, t, threshold, claim, gasWei: 0n, receipts: new Map() };
    try {
      if (claimed.kind === "taken_over") return await this.resume(run);
      // planned before the claim: another engine may have acted in between (and re-armed the trigger it restored)
      if (plan && chainHealthScore(await this.chain.position(t.chain, d.safe)) >= threshold) {
        return await releaseTrigger(this.parts, run, {
          treasuryId: d.treasuryId,
          outcome: "healthy",
          detail: "restored by another engine's action before this one's claim",
        });
      }
      claim.healthBefore = health;
      claim.ltvBefore = ltvPct(position);
      plan ??= await planRepayment(this.parts, this.opts, d, t.chain, position, health);
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
    const { d, t, claim } = run;
    claim.repayMicro = plan.repay;
    claim.plan = plan.about;
    if (!(await this.ctx.stores.protectionClaims.record(claim, this.ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
    const client = this.chain.client(t.chain);
    for (const c of plan.calls) {
      try {
        await client.simulateContract({ account: this.parts.automation, address: d.module, ...moduleCall(c) });
      } catch (err) {
        return failTrigger(this.parts, run, plan.ethPrice, `refused before sending: ${moduleRevertReason(err)}`);
      }
      // signed at the store's nonce and written on the claim, sent, then its receipt (replaced while it stays pending)
      const receipt = await landCall(this.parts, run, c, plan.fees);
      if (receipt.status !== "success") {
        // why: the same call replayed on the state its block started from (one transaction a block on an automining node)
        const why = await client
          .simulateContract({ account: this.parts.automation, address: d.module, ...moduleCall(c), blockNumber: receipt.blockNumber - 1n, gas: c.gas })
          .then(() => "not reproduced on the block before")
          .catch((err: unknown) => moduleRevertReason(err));
        return failTrigger(this.parts, run, plan.ethPrice, `reverted: ${receipt.transactionHash} (${why})`);
      }
    }
    return finishTrigger(this.parts, run, plan.ethPrice);
  }

  /**
   * A dead engine's claim: its signed transactions are sent again (the same
   * bytes, so at most once on chain) and their receipts read. A repayment that
   * landed is recorded as the trigger's action; otherwise the trigger is
   * decided afresh on the position as it is now.
   */
  private async resume(run: Run): Promise<TickResult> {
    const { d, t, claim } = run;
    const ethPrice = await this.chain.ethPrice(t.chain);
    // one wait per nonce: the receipt of whichever of its variants (a replacement at a higher fee) landed
    for (const sent of claim.sent.filter((s, i, all) => all.findIndex((o) => o.nonce === s.nonce) === i)) await awaitLanded(this.parts, run, sent);
    const repaid = claim.sent.some((s) => (s.call === "repay" || s.call === "deleverage") && run.receipts.get(s.hash)?.status === "success");
    if (repaid) return finishTrigger(this.parts, run, ethPrice);
    const position = await this.chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    if (health >= run.threshold) return failTrigger(this.parts, run, ethPrice, "superseded: the position recovered before the repayment landed");
    claim.healthBefore ??= health;
    claim.ltvBefore ??= ltvPct(position);
    const plan = await planRepayment(this.parts, this.opts, d, t.chain, position, health);
    if (!isPlan(plan)) return releaseTrigger(this.parts, run, plan);
    return this.execute(run, plan);
  }
}
