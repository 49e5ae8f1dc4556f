/**
 * The protection engine: watches managed treasuries' Aave positions on their chain and, when the health score
 * falls below the protect threshold (1.3 by default, tighter per treasury), repays toward the park target
 * through the Safe's ProtectionModule with the service's automation key: from the Safe's idle USDC, else its
 * supplied USDC, else its collateral sold in one transaction (the module's deleverage, planned by
 * packages/core/src/domain/deleverage.ts and sized on the pool's QuoterV2 quote, with Aave flash liquidity near
 * the threshold; partial when the pool's depth within the module's bound cannot reach the target in one act).
 *
 * How it watches (a pass per new block; docs/ARCHITECTURE.md, "Protection at scale"):
 * - the Safes are split among the engines of one automation key by leased shards in the shared store
 *   (store/engine-shard-store.ts: shard = hash(treasury id) mod `shards`); an engine reads only its shards'
 *   Safes and renews them every third of their lease (3 s) apart from its passes, and a dead engine's shards
 *   are taken over once their lease lapses;
 * - a block's watch (chain-watch.ts) costs a fixed number of requests: the market in one multicall, the changed
 *   Safes in one eth_getLogs, the positions to (re)read and the Safes to confirm in multicall chunks, all at one
 *   block number; the trigger index (packages/core/src/domain/trigger-index.ts) says which Safes may be crossed;
 * - acting is apart from watching: a crossed Safe's trigger is handed to trigger-act.ts and the pass goes on;
 *   the act's transactions are signed at nonces the store allocates, so several land in one block, and a stuck
 *   one is replaced with the same nonce and a higher fee. A pass never awaits a receipt;
 * - the store is read twice a pass (the delegations, the open claims), and written once for the samples (the
 *   console's chart), once for the heartbeat and once for the shards' lease.
 *
 * What an act guarantees is unchanged: never without active delegation (the module enabled and the Safe
 * funded, read at the block); once per trigger (the claim disarms it for every engine at once, re-armed when the
 * position is seen back above the threshold or after a partial deleverage that moved it); crash-safe (every
 * transaction is written on the claim before it is sent, and a takeover re-sends those bytes); gas caps (spec
 * 2.12: 0.25 USD an action, 5 USD a month per treasury); every action in the fee audit trail with fee 0; only
 * delegations attached with the Safe's own signature, recorded on the treasury the Safe named.
 */
import { ZoneWatch } from "./zone-watch";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { ltvPct } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";
import { ChainGateway, chainHealthScore } from "../chain/chain-gateway";
import { DelegationService } from "../services/delegation-service";
import { ExecutionRecorder } from "../services/execution-recorder";
import { INSTANCE_ID, newHolder } from "../store/lease";
import { SHARD_LEASE_MS, shardOf } from "../store/engine-shard-store";
import type { TreasurySample } from "../store/position-sample-store";
import { ChainWatch, type Watched } from "./chain-watch";
import type { GasSettings } from "./repayment-plan";
import { TriggerActor } from "./trigger-act";
import type { EngineContext, EngineParts, TickResult } from "./trigger-run";

export type { TickResult } from "./trigger-run";

export interface EngineOptions extends GasSettings {
  rpcUrls: Partial<Record<TreasuryChain, string>>;
  automationKey: Hex;
  /**
   * The automation key's Safes are split into this many shards leased among its engines (PROTECTION_SHARDS in
   * the engine process, 64 by default there). 0: this engine watches every Safe of its key without a lease (one
   * engine for the key: tests and a single process).
   */
  shards?: number;
  /** a shard's lease (ms); renewed every pass */
  shardLeaseMs?: number;
}

/** what one pass did */
export interface PassReport {
  block: bigint | null;
  /** Safes this engine watched (its shards') */
  watched: number;
  shards: number;
  /** positions read in full */
  reread: number;
  /** the trigger index's candidates */
  candidates: number;
  /** Safes looked at on chain (candidates, re-read, open claims, disarmed triggers) */
  confirmed: number;
  /** acts started by this pass */
  started: number;
  /** acts still running after it */
  acting: number;
  ms: number;
}

export class ProtectionEngine {
  /** this engine's name: its heartbeat, its shards and the claims it holds (a dead one's are taken over) */
  readonly id = newHolder("eng");
  private readonly chain: ChainGateway;
  private readonly delegations: DelegationService;
  private readonly parts: EngineParts;
  private readonly actor: TriggerActor;
  private readonly watches = new Map<TreasuryChain, ChainWatch>();
  /** acts running, by treasury: one at a time per Safe, none awaited by a pass */
  private readonly acts = new Map<string, Promise<TickResult>>();
  private readonly zones: ZoneWatch;
  private passing = false;
  /** the shards this engine holds (its last renewal), and when it renewed them */
  private shardSet: Set<number> | undefined;
  private renewedAt = 0;
  private renewing: Promise<Set<number>> | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private loops: Promise<void>[] = [];
  /** told of every act's end (the engine process logs it) */
  private onActed: ((r: TickResult) => void) | undefined;

  constructor(
    private readonly ctx: EngineContext,
    private readonly opts: EngineOptions,
  ) {
    this.chain = new ChainGateway(opts.rpcUrls, 10_000);
    this.delegations = new DelegationService(ctx, this.chain);
    this.parts = { ctx, chain: this.chain, recorder: new ExecutionRecorder(ctx), automation: privateKeyToAccount(opts.automationKey), engineId: this.id };
    this.actor = new TriggerActor(this.parts, opts, this.delegations, this.id);
    this.zones = new ZoneWatch(ctx);
    for (const c of Object.keys(opts.rpcUrls) as TreasuryChain[]) if (this.chain.connected(c)) this.watches.set(c, new ChainWatch(c, this.chain.client(c)));
  }

  get address(): `0x${string}` {
    return this.parts.automation.address;
  }

  /**
   * One pass at each chain's latest block (or at `block` on a one-chain engine): the watch, and the acts it
   * starts (not awaited). `collect` also answers a result for every watched Safe (tests; tick()).
   */
  async pass(o: { block?: bigint; collect?: boolean } = {}): Promise<PassReport & { results: TickResult[]; running: Promise<TickResult>[] }> {
    const t0 = performance.now();
    const report = { block: null as bigint | null, watched: 0, shards: 0, reread: 0, candidates: 0, confirmed: 0, started: 0, acting: 0, ms: 0 };
    if (this.passing) return { ...report, results: [], running: [] };
    this.passing = true;
    const results: TickResult[] = [];
    const running: Promise<TickResult>[] = [];
    try {
      const now = this.ctx.clock.now();
      // the gateway's auto_repay_active reads this: an engine with this key is watching; the instance's beat lets
      // another engine take this one's claims at once if it dies
      await Promise.all([this.ctx.stores.instances.beatEngine(this.id, this.address, now), this.ctx.stores.instances.beat(INSTANCE_ID, now)]);
      const count = this.opts.shards ?? 0;
      // the shards of the last renewal when a watching engine's timer renewed them lately; else renewed now
      const mine =
        count > 0 ? (this.renewTimer && this.shardSet && Date.now() - this.renewedAt < this.leaseMs / 3 ? this.shardSet : await this.renewShards()) : undefined;
      report.shards = mine?.size ?? 0;
      const [all, open] = await Promise.all([
        this.ctx.stores.delegations.allProven(),
        this.ctx.stores.protectionClaims.allOpen().then((claims) => new Set(claims.map((c) => c.treasuryId))),
      ]);
      const ours = all.filter((d) => d.automation.toLowerCase() === this.address.toLowerCase() && (!mine || mine.has(shardOf(d.treasuryId, count))));
      if (o.collect) {
        for (const d of all)
          if (d.automation.toLowerCase() !== this.address.toLowerCase())
            results.push({ treasuryId: d.treasuryId, outcome: "not_active", detail: "another automation key" });
      }
      const samples: TreasurySample[] = [];
      for (const [chain, watch] of this.watches) {
        const watched: Watched[] = ours
          .filter((d) => (d.chain ?? "base") === chain)
          .map((d) => ({ d, threshold: d.protectBelowHealth ?? PRESETS.balanced.protectBelowHealthScore }));
        report.watched += watched.length;
        if (watched.length === 0) continue;
        const block = o.block ?? (await this.chain.client(chain).getBlockNumber({ cacheTime: 0 }));
        report.block = block;
        const seen = await watch.observe(block, watched, (w) => open.has(w.d.treasuryId) || !w.d.armed || w.d.pendingUpgrade !== null);
        report.reread += seen.reread;
        report.candidates += seen.candidates;
        report.confirmed += seen.confirmed.length;
        const looked = new Set<string>();
        for (const { w, on } of seen.confirmed) {
          const { d, threshold } = w;
          looked.add(d.treasuryId);
          const { account } = on;
          const health = chainHealthScore(account);
          samples.push({
            treasuryId: d.treasuryId,
            at: now.toISOString(),
            ltv: ltvPct(account),
            healthScore: health,
            collateralMicro: account.collateralMicro,
            debtMicro: account.debtMicro,
          });
          if (this.acts.has(d.treasuryId)) {
            results.push({ treasuryId: d.treasuryId, outcome: "in_progress", detail: "this engine is acting on this trigger" });
            continue;
          }
          const result = await this.decide(w, on.moduleEnabled || d.pendingUpgrade !== null, account.collateralBase > 0n, health, open.has(d.treasuryId));
          if (result) results.push(result);
          else {
            running.push(this.acts.get(d.treasuryId)!);
            report.started++;
          }
        }
        if (o.collect)
          for (const { d } of watched)
            if (!looked.has(d.treasuryId))
              results.push({ treasuryId: d.treasuryId, outcome: "healthy", detail: `health above its trigger by the index at block ${block}` });
      }
      // the console's chart: one write for the pass
      await this.ctx.stores.positionSamples.sampleMany(samples);
      // a position that moved into another zone: its treasury's event
      await this.zones.observe(samples);
      report.acting = this.acts.size;
      report.ms = Math.round(performance.now() - t0);
      return { ...report, results, running };
    } finally {
      this.passing = false;
    }
  }

  /** what a look at one Safe decides without waiting: a result now, or undefined when an act was started for it */
  private async decide(w: Watched, enabled: boolean, funded: boolean, health: number, claimed: boolean): Promise<TickResult | undefined> {
    const { d, threshold } = w;
    if (!claimed) {
      if (!enabled) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "the module is not enabled on the Safe" };
      if (!funded) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "approved_pending_funds" };
      if (health >= threshold) {
        if (!d.armed) await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
        return { treasuryId: d.treasuryId, outcome: "healthy", detail: `health ${health}` };
      }
      if (!d.armed) return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };
    }
    const act = this.actor
      .act(d, threshold)
      .catch((err: unknown): TickResult => ({
        treasuryId: d.treasuryId,
        outcome: "failed",
        detail: err instanceof Error ? err.message.split("\n")[0] : String(err),
      }))
      .then((r) => {
        this.onActed?.(r);
        return r;
      })
      .finally(() => this.acts.delete(d.treasuryId));
    this.acts.set(d.treasuryId, act);
    return undefined;
  }

  private get leaseMs(): number {
    return this.opts.shardLeaseMs ?? SHARD_LEASE_MS;
  }

  /** renew this engine's shards (and take or give back its fair share); one renewal at a time */
  private renewShards(): Promise<Set<number>> {
    this.renewing ??= this.ctx.stores.engineShards
      .acquire(this.id, this.address, this.opts.shards!, this.ctx.clock.now(), this.leaseMs)
      .then((held) => {
        this.shardSet = new Set(held);
        this.renewedAt = Date.now();
        return this.shardSet;
      })
      .finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  /** a pass and the acts it started, awaited: a result for every Safe this engine watches */
  async tick(): Promise<TickResult[]> {
    const p = await this.pass({ collect: true });
    return [...p.results, ...(await Promise.all(p.running))];
  }

  /** every act started so far, finished */
  async settled(): Promise<void> {
    while (this.acts.size > 0) await Promise.allSettled([...this.acts.values()]);
  }

  /**
   * Watch: a pass per new block on each chain (the head polled every `pollMs`); a pass that takes longer than a
   * block goes on at the newest block, never at each block it missed (the logs since its last block are read).
   */
  start(pollMs = 250, onPass?: (r: PassReport) => void, onError?: (err: unknown) => void, onActed?: (r: TickResult) => void): void {
    this.stopping = false;
    this.onActed = onActed;
    // the shards renewed every third of their lease, whatever a pass takes: a slow pass keeps them, a dead engine loses them fast
    if ((this.opts.shards ?? 0) > 0) this.renewTimer = setInterval(() => void this.renewShards().catch((err: unknown) => onError?.(err)), this.leaseMs / 3);
    for (const chain of this.watches.keys()) {
      const client = this.chain.client(chain);
      this.loops.push(
        (async () => {
          let last: bigint | undefined;
          while (!this.stopping) {
            try {
              const head = await client.getBlockNumber({ cacheTime: 0 });
              if (head !== last) {
                const r = await this.pass({ block: this.watches.size === 1 ? head : undefined });
                // a pass that failed is taken again at the next poll (the logs since the last good block are read then)
                last = head;
                onPass?.(r);
                continue;
              }
            } catch (err) {
              onError?.(err);
            }
            await new Promise((r) => setTimeout(r, pollMs));
          }
        })(),
      );
    }
  }

  /** stop watching; the acts running finish; the shards are released for the other engines */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    await Promise.all(this.loops);
    this.loops = [];
    await this.settled();
    if ((this.opts.shards ?? 0) > 0) await this.ctx.stores.engineShards.release(this.id);
  }
}
