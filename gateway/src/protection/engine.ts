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
 */
import { encodeFunctionData, keccak256, parseEventLogs, type Hex, type TransactionReceipt } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { AAVE_ORACLE_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { ChainGateway, chainHealthScore, usdOfWei } from "../chain/chain-gateway";
import { feeFor } from "@treasury/core/domain/fees";
import { GAS_CAPS } from "@treasury/core/domain/policy";
import { ltvPct } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";
import { newId } from "@treasury/core/lib/ids";
import type { ServiceContext } from "../services/context";
import { DelegationService } from "../services/delegation-service";
import { ExecutionRecorder } from "../services/execution-recorder";
import { formatDecimal } from "@treasury/core/domain/money";
import type { DelegationRecord } from "../store/delegation-store";
import { landedReceipt } from "../chain/landed";
import type { ProtectionClaim, SentTransaction } from "../store/protection-claim-store";
import type { TreasuryRecord } from "../store/treasury-store";
import { repaymentSource } from "./repayment-source";
import { LostClaim } from "./lost-claim";
import { moduleCall, moduleRevertReason, type Call } from "./module-calls";

export interface TickResult {
  treasuryId: string;
  outcome: "not_active" | "healthy" | "already_acted" | "in_progress" | "executed" | "skipped" | "failed";
  detail?: string;
}

/** how long one pass waits for a transaction it sent before leaving it on the claim for a later pass */
const RECEIPT_TIMEOUT_MS = 60_000;

interface Plan {
  calls: Call[];
  repay: bigint;
  fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
  ethPrice: bigint;
  /** what the plan says of itself, kept on the claim (the record's note) */
  about: NonNullable<ProtectionClaim["plan"]>;
}

const isPlan = (p: Plan | TickResult): p is Plan => "calls" in p;

/** one engine's work on one claimed trigger */
interface Run {
  d: DelegationRecord;
  t: TreasuryRecord;
  threshold: number;
  claim: ProtectionClaim;
  /** ETH spent on gas by the claim's landed transactions */
  gasWei: bigint;
  receipts: Map<Hex, TransactionReceipt>;
}

export class ProtectionEngine {
  private readonly chain: ChainGateway;
  private readonly delegations: DelegationService;
  private readonly recorder: ExecutionRecorder;
  private readonly automation;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** this engine's name on the claims it holds */
  private readonly holder = newId("eng");

  constructor(
    private readonly ctx: ServiceContext<
      "apiKeys" | "delegations" | "executions" | "fees" | "instances" | "positionSamples" | "protectionClaims" | "treasuries"
    >,
    private readonly opts: {
      rpcUrls: Partial<Record<TreasuryChain, string>>;
      automationKey: Hex;
      gasCaps?: { perActionUsd: number; perMonthUsd: number };
      /** priority fee per gas (default 0.001 gwei, an L2 tip) */
      priorityFeeWei?: bigint;
    },
  ) {
    this.chain = new ChainGateway(opts.rpcUrls, 10_000);
    this.delegations = new DelegationService(ctx, this.chain);
    this.recorder = new ExecutionRecorder(ctx);
    this.automation = privateKeyToAccount(opts.automationKey);
  }

  get address(): `0x${string}` {
    return this.automation.address;
  }

  private caps() {
    return this.opts.gasCaps ?? { perActionUsd: GAS_CAPS.per_action_usd, perMonthUsd: GAS_CAPS.per_month_usd };
  }

  /** one pass over every delegation; returns what happened to each */
  async tick(): Promise<TickResult[]> {
    if (this.running) return [];
    this.running = true;
    try {
      // the gateway's auto_repay_active reads this: an engine with this key is watching
      await this.ctx.stores.instances.beatEngine(this.automation.address, this.ctx.clock.now());
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
    if (d.automation.toLowerCase() !== this.automation.address.toLowerCase())
      return { treasuryId: d.treasuryId, outcome: "not_active", detail: "another automation key" };
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
      plan = await this.plan(d, t.chain, position, health);
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
        return await this.release(run, { treasuryId: d.treasuryId, outcome: "healthy", detail: "restored by another engine's action before this one's claim" });
      }
      claim.healthBefore = health;
      claim.ltvBefore = ltvPct(position);
      plan ??= await this.plan(d, t.chain, position, health);
      if (!isPlan(plan)) return await this.release(run, plan);
      return await this.execute(run, plan);
    } catch (err) {
      if (err instanceof LostClaim) return { treasuryId: d.treasuryId, outcome: "in_progress", detail: err.message };
      // the claim stays: what was sent is on record, and the next pass (or another engine, once the lease lapses) settles it
      throw err;
    }
  }

  /** the repayment that parks the position, its calls and gas, or why nothing can be done (recorded as skipped) */
  private async plan(
    d: DelegationRecord,
    chain: TreasuryChain,
    position: Awaited<ReturnType<ChainGateway["position"]>>,
    health: number,
  ): Promise<Plan | TickResult> {
    const t = (await this.ctx.stores.treasuries.get(d.treasuryId))!;
    const m = AAVE_MARKETS[chain];
    const park = BigInt(PRESETS[t.preset].parkTarget * 100);
    const client = this.chain.client(chain);
    const [usdcPrice, ethPrice] = await Promise.all(
      [m.usdc, m.weth].map((asset) => client.readContract({ address: m.oracle, abi: AAVE_ORACLE_ABI, functionName: "getAssetPrice", args: [asset] })),
    );
    const source = await repaymentSource(this.chain, d, chain, position, usdcPrice!, park);
    if (typeof source === "string") return this.skip(d, health, ltvPct(position), source);
    const { calls, repay, about } = source;

    // the gas budget: the automation key pays, so the cost is checked before anything is sent
    // L2 fees: twice the current base fee plus a small tip (nodes often suggest a mainnet-sized 1 gwei tip)
    const block = await client.getBlock();
    const tip = this.opts.priorityFeeWei ?? 1_000_000n;
    const fees = { maxPriorityFeePerGas: tip, maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip };
    // the first call is estimated as it stands; a repayment after its approval is estimated generously
    let gas = 0n;
    for (const c of calls) {
      const generous = c.kind === "deleverage" ? c.gas : 400_000n;
      gas +=
        c === calls[0] ? await client.estimateContractGas({ account: this.automation, address: d.module, ...moduleCall(c) }).catch(() => generous) : generous;
    }
    const costUsd = usdOfWei(gas * fees.maxFeePerGas, ethPrice!);
    const caps = this.caps();
    if (costUsd > caps.perActionUsd)
      return this.skip(d, health, ltvPct(position), `gas ${costUsd.toFixed(4)} USD is above the ${caps.perActionUsd} USD per-action cap`);
    const month = await this.ctx.stores.delegations.monthGasUsd(d.safe, this.ctx.clock.now());
    if (month + costUsd > caps.perMonthUsd)
      return this.skip(d, health, ltvPct(position), `gas budget: ${month.toFixed(4)} USD spent this month, cap ${caps.perMonthUsd}`);
    return { calls, repay, fees, ethPrice: ethPrice!, about };
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
        await client.simulateContract({ account: this.automation, address: d.module, ...moduleCall(c) });
      } catch (err) {
        return this.fail(run, plan.ethPrice, `refused before sending: ${moduleRevertReason(err)}`);
      }
      const receipt = await this.send(run, c, plan.fees);
      if (receipt.status !== "success") {
        // why: the same call replayed on the state its block started from (one transaction a block on an automining node)
        const why = await client
          .simulateContract({ account: this.automation, address: d.module, ...moduleCall(c), blockNumber: receipt.blockNumber - 1n, gas: c.gas })
          .then(() => "not reproduced on the block before")
          .catch((err: unknown) => moduleRevertReason(err));
        return this.fail(run, plan.ethPrice, `reverted: ${receipt.transactionHash} (${why})`);
      }
    }
    return this.finish(run, plan.ethPrice);
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
    for (const sent of claim.sent) await this.landed(run, sent);
    const repaid = claim.sent.some((s) => (s.call === "repay" || s.call === "deleverage") && run.receipts.get(s.hash)?.status === "success");
    if (repaid) return this.finish(run, ethPrice);
    const position = await this.chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    if (health >= run.threshold) return this.fail(run, ethPrice, "superseded: the position recovered before the repayment landed");
    claim.healthBefore ??= health;
    claim.ltvBefore ??= ltvPct(position);
    const plan = await this.plan(d, t.chain, position, health);
    if (!isPlan(plan)) return this.release(run, plan);
    return this.execute(run, plan);
  }

  /**
   * Sign one call, write it on the claim, then send it and wait for its
   * receipt. A transaction whose nonce another one took (two engines, one key)
   * is signed again with the next nonce, a bounded number of times.
   */
  private async send(run: Run, call: Call, fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }): Promise<TransactionReceipt> {
    const client = this.chain.client(run.t.chain);
    const chainId = await client.getChainId();
    for (let attempt = 0; attempt < 3; attempt++) {
      const nonce = await client.getTransactionCount({ address: this.automation.address, blockTag: "pending" });
      const raw = await this.automation.signTransaction({
        type: "eip1559",
        chainId,
        nonce,
        to: run.d.module,
        value: 0n,
        gas: call.gas,
        ...fees,
        data: encodeFunctionData(moduleCall(call)),
      });
      const sent: SentTransaction = { hash: keccak256(raw), raw, nonce, call: call.kind };
      run.claim.sent.push(sent);
      if (!(await this.ctx.stores.protectionClaims.record(run.claim, this.ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
      const receipt = await this.landed(run, sent);
      if (receipt) return receipt;
    }
    throw new Error("the automation key's nonce was taken three times in a row");
  }

  /** send signed bytes again and wait for their receipt (chain/landed.ts); null when their nonce went to another transaction */
  private async landed(run: Run, sent: SentTransaction): Promise<TransactionReceipt | null> {
    let renewed = Date.now();
    const receipt = await landedReceipt(this.chain.client(run.t.chain), this.automation.address, sent, {
      timeoutMs: RECEIPT_TIMEOUT_MS,
      whileWaiting: async () => {
        if (Date.now() - renewed <= 1_000) return;
        if (!(await this.ctx.stores.protectionClaims.renew(run.claim.treasuryId, run.claim.holder, this.ctx.clock.now())))
          throw new LostClaim("this trigger", "engine");
        // a pass that waits on a transaction is still a pass: the engine stays on record as watching
        await this.ctx.stores.instances.beatEngine(this.automation.address, this.ctx.clock.now());
        renewed = Date.now();
      },
    });
    if (receipt) {
      run.receipts.set(sent.hash, receipt);
      run.gasWei += receipt.gasUsed * receipt.effectiveGasPrice;
    }
    return receipt;
  }

  /** the trigger's repayment landed: its action and audit entry, and the end of the claim, in one transaction */
  private async finish(run: Run, ethPrice: bigint): Promise<TickResult> {
    const { d, t, claim } = run;
    const after = await this.chain.position(t.chain, d.safe);
    const now = this.ctx.clock.now();
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
    await this.ctx.tx.transaction(async () => {
      // fenced: an engine that lost the claim records nothing (its successor does)
      if (!(await this.ctx.stores.protectionClaims.finish(claim.treasuryId, claim.holder))) throw new LostClaim("this trigger", "engine");
      await this.ctx.stores.delegations.recordAction({
        id: claim.actionId,
        treasuryId: d.treasuryId,
        safe: d.safe,
        status: "executed",
        reason: note,
        healthBefore: claim.healthBefore,
        ltvBefore: claim.ltvBefore,
        ltvAfter: ltvPct(after),
        repayMicro: repay,
        txHashes: this.landedHashes(run),
        gasUsd: this.gasUsd(run, ethPrice),
        createdAt: now.toISOString(),
      });
      await this.recorder.record({
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
      if (chainHealthScore(after) >= run.threshold || (claim.plan?.partial === true && moved)) await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
    });
    return {
      treasuryId: d.treasuryId,
      outcome: "executed",
      detail: `repaid ${formatDecimal(repay, 6)} USDC${note ? ` (${note})` : ""}, LTV ${claim.ltvBefore}% -> ${ltvPct(after)}%`,
    };
  }

  /** the action failed: recorded with its reason, the claim ended and the trigger re-armed (retried within the gas caps) */
  private async fail(run: Run, ethPrice: bigint, reason: string): Promise<TickResult> {
    const { d, claim } = run;
    await this.ctx.tx.transaction(async () => {
      if (!(await this.ctx.stores.protectionClaims.finish(claim.treasuryId, claim.holder))) throw new LostClaim("this trigger", "engine");
      await this.ctx.stores.delegations.recordAction({
        id: claim.actionId,
        treasuryId: d.treasuryId,
        safe: d.safe,
        status: "failed",
        reason,
        healthBefore: claim.healthBefore,
        ltvBefore: claim.ltvBefore,
        ltvAfter: null,
        repayMicro: claim.repayMicro,
        txHashes: this.landedHashes(run),
        gasUsd: this.gasUsd(run, ethPrice),
        createdAt: this.ctx.clock.now().toISOString(),
      });
      await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
    });
    return { treasuryId: d.treasuryId, outcome: "failed", detail: reason };
  }

  /** nothing was sent for this claim and nothing can be (already recorded as skipped): end it and re-arm */
  private async release(run: Run, result: TickResult): Promise<TickResult> {
    await this.ctx.tx.transaction(async () => {
      if (!(await this.ctx.stores.protectionClaims.finish(run.claim.treasuryId, run.claim.holder))) throw new LostClaim("this trigger", "engine");
      await this.ctx.stores.delegations.setArmed(run.d.treasuryId, true);
    });
    return result;
  }

  /** the transactions of this claim that are on chain (a dropped one, whose nonce went elsewhere, is not) */
  private landedHashes(run: Run): Hex[] {
    return run.claim.sent.filter((s) => run.receipts.has(s.hash)).map((s) => s.hash);
  }

  private gasUsd(run: Run, ethPrice: bigint): number {
    return usdOfWei(run.gasWei, ethPrice);
  }

  private async skip(d: DelegationRecord, health: number, ltv: number, reason: string): Promise<TickResult> {
    await this.ctx.stores.delegations.recordAction({
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
      createdAt: this.ctx.clock.now().toISOString(),
    });
    return { treasuryId: d.treasuryId, outcome: "skipped", detail: reason };
  }
}
