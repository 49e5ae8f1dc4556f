/**
 * The market-wide fall: a share of the watched Safes cross their trigger in the same block (the ETH feed moved,
 * the pool arbitraged to the same price), with automine off from then on and one block mined at a time once
 * the engines have taken their pass at it (or gone quiet); a second drop later takes any Safe still not
 * deleveraged under 1, where a liquidator beside calls Aave's liquidationCall. The engines run as processes
 * (gateway/src/protection/main.ts), 1, 2 or 3, one of them killed with SIGKILL in the middle of the fall if
 * asked. The books: the module's Deleveraged events (blocks from the fall to each Safe's first deleverage,
 * acts per trigger), the Pool's LiquidationCall events, the store's recorded actions.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAbiItem, parseEventLogs, type Hex } from "viem";
import { AAVE_LIQUIDATION_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { arbitrageTo } from "../../../fixtures/arbitrageur";
import { BASE_BLOCK_SECONDS } from "../../../fixtures/base-fork";
import type { DatabaseLocation } from "../../../gateway/src/store/db";
import { openDatabase } from "../../../gateway/src/store/open-database";
import { accountOf, forkClient, WAD, type ForkClient } from "../fork-client";
import { deepenWethPool } from "./market-maker";
import { cloneTemplate, makeClones, makeRealSafes, USDC, type RealSafe } from "./population";
import type { World } from "./world";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const m = AAVE_MARKETS.base;
const LIQUIDATION_EVENT = parseAbiItem(
  "event LiquidationCall(address indexed collateralAsset, address indexed debtAsset, address indexed user, uint256 debtToCover, uint256 liquidatedCollateralAmount, address liquidator, bool receiveAToken)",
);

/** the health trigger of every watched Safe */
export const TRIGGER = 1.3;
/** 10 WETH at 3,000 USD: 55% LTV (health 1.50) crosses 1.3 at 2,600 USD; 30% (health 2.75) stays healthy to the end */
export const CROSSING_DEBT = 16_500n * USDC;
export const HEALTHY_DEBT = 9_000n * USDC;
/** the fall: 3,000 -> 2,500 USD per ETH (crossing Safes at health 1.25); the second drop: 1,950 (0.975 if nothing was done) */
export const FALL_ETH = 2_500;
export const SECOND_DROP_ETH = 1_950;
/** the market maker's depth around the fall's price (market-maker.ts): 7.5 M USDC within 3% */
export const FALL_DEPTH_USDC = 7_500_000n * USDC;
export const FALL_DEPTH_WIDTH_PCT = 3;

export interface Population {
  crossing: RealSafe[];
  template: RealSafe;
  clones: `0x${string}`[];
  made: { real_safes: number; real_ms_total: number; real_ms_each: number; clones: number; clone_ms_total: number; clone_ms_each: number };
}

/**
 * `safes` watched Safes of which `crossing` are real ones that cross in the fall, one real healthy template,
 * the rest cloned from it; grown from `from` (a smaller population on the same world) when given
 */
export async function populate(world: World, safes: number, crossing: number, concurrency = 8, from?: Population): Promise<Population> {
  const t0 = performance.now();
  const template = from?.template ?? (await makeRealSafes(world.fork, world.url, world.automation, 1, HEALTHY_DEBT, TRIGGER, 1))[0]!;
  const more = crossing - (from?.crossing.length ?? 0);
  const crossingSafes = [
    ...(from?.crossing ?? []),
    ...(await makeRealSafes(world.fork, world.url, world.automation, more, CROSSING_DEBT, TRIGGER, concurrency)),
  ];
  const realMs = performance.now() - t0;
  const real = more + (from ? 0 : 1);
  const t1 = performance.now();
  const cloneCount = Math.max(0, safes - crossing - 1 - (from?.clones.length ?? 0));
  const clones =
    cloneCount > 0 ? await makeClones(world.fork, world.gw.ctx, await cloneTemplate(world.fork, template), world.automation, cloneCount, TRIGGER) : [];
  const cloneMs = performance.now() - t1;
  return {
    crossing: crossingSafes,
    template,
    clones: [...(from?.clones ?? []), ...clones],
    made: {
      real_safes: real,
      real_ms_total: Math.round(realMs),
      real_ms_each: real ? Math.round(realMs / real) : 0,
      clones: cloneCount,
      clone_ms_total: Math.round(cloneMs),
      clone_ms_each: cloneCount ? Math.round((cloneMs / cloneCount) * 100) / 100 : 0,
    },
  };
}

export interface FallOptions {
  engines: number;
  /** kill -9 one engine once the fall's first act is pending */
  killOne?: boolean;
  /** blocks mined after the fall block */
  blocks?: number;
  /** the second drop comes after this many blocks */
  secondDropAfter?: number;
  /** the store the engines run on (a copy per run in the bench) */
  database: DatabaseLocation;
}

export interface FallRow {
  safes: number;
  crossing: number;
  engines: number;
  killed: boolean;
  engine_kind: "pass" | "tick";
  fall_block: number;
  deleveraged: number;
  /** from the fall block to each Safe's first deleverage (a deleverage in the next block: 1) */
  blocks_to_deleverage_median: number | null;
  blocks_to_deleverage_max: number | null;
  within_2_blocks: number;
  liquidations: number;
  liquidated_safes: number;
  deleverages: number;
  acts_per_trigger_max: number;
  recorded_actions: number;
  /** the store's actions on the crossing Safes: status and reason, counted */
  action_outcomes: Record<string, number>;
  blocks_mined: number;
  wall_ms: number;
  /** the Safes each engine watched in its last pass (its shards'; a killed engine's last before it died) */
  watched_per_engine: number[];
}

interface EngineProc {
  child: ChildProcess;
  passes: bigint[];
  /** the Safes each pass watched (its shards') */
  watched: number[];
  alive: boolean;
}

function startEngine(o: { database: DatabaseLocation; dataDir: string; rpcUrl: string; automationKey: Hex }, children: ChildProcess[]): Promise<EngineProc> {
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/protection/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...("url" in o.database ? { DATABASE_URL: o.database.url, DATA_DIR: o.dataDir } : { DATA_DIR: path.dirname(o.database.file) }),
      BASE_RPC_URL: o.rpcUrl,
      AUTOMATION_PRIVATE_KEY: o.automationKey,
      PROTECTION_INTERVAL_MS: "50",
      PROTECTION_POLL_MS: "50",
      LEASE_MS: "1500",
      LOG_LEVEL: "debug",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const proc: EngineProc = { child, passes: [], watched: [], alive: true };
  child.once("exit", () => (proc.alive = false));
  child.stderr!.resume();
  return new Promise((resolve, reject) => {
    let buffered = "";
    let running = false;
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!running && line.includes("running")) {
          running = true;
          resolve(proc);
        }
        if (!line.includes('"pass"')) continue;
        try {
          const j = JSON.parse(line) as { msg?: string; block?: string | number; watched?: number };
          if (j.msg === "pass" && j.block !== undefined) proc.passes.push(BigInt(j.block));
          if (j.msg === "pass" && typeof j.watched === "number") proc.watched.push(j.watched);
        } catch {
          // not a JSON line
        }
      }
    });
    child.once("exit", (code) => running || reject(new Error(`the engine process exited with ${code} before it ran`)));
    // an engine that says it runs in other words: alive after 20 s is running
    setTimeout(() => proc.alive && !running && ((running = true), resolve(proc)), 20_000).unref();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * until every live engine that logs its passes passed `block` and the pending pool stayed the same `quietMs`,
 * at least `minMs` after the block (Base's block time: an engine that does not log its passes gets
 * what a block on Base gives it) and at most `maxMs`
 */
async function waitForEngines(
  world: World,
  engines: EngineProc[],
  block: bigint,
  onPending?: (n: number) => void,
  quietMs = 400,
  maxMs = 8_000,
  minMs = BASE_BLOCK_SECONDS * 1000,
): Promise<void> {
  const start = Date.now();
  let last = -1;
  let since = Date.now();
  let passedAt: number | undefined;
  for (;;) {
    const status = (await world.anvil.request({ method: "txpool_status" } as never)) as { pending: string | number };
    const pending = Number(status.pending);
    if (pending !== last) {
      last = pending;
      since = Date.now();
    }
    onPending?.(pending);
    // the quiet time counts from the pass too: the acts a pass started are broadcast after it
    if (passedAt === undefined && engines.every((e) => !e.alive || e.passes.length === 0 || e.passes.some((b) => b >= block))) passedAt = Date.now();
    const quiet = passedAt !== undefined && Date.now() - Math.max(since, passedAt) >= quietMs;
    if ((quiet && Date.now() - start >= minMs) || Date.now() - start > maxMs) return;
    await sleep(50);
  }
}

/**
 * Before the fall (the node still automines, and before any snapshot the runs go back to): a liquidator with
 * plenty of USDC approved to the Pool, returned; depth in the WETH pool around the fall's price
 * (market-maker.ts); and the arbitrageur funded (fixtures/arbitrageur.ts funds it
 * on its first trade on a node, once: a revert to a snapshot taken before would take its funds away)
 */
export async function prepareFall(world: World): Promise<ForkClient> {
  await arbitrageTo(world.fork.rpcUrl, "WETH", 3_000);
  await deepenWethPool(world.fork, FALL_ETH, FALL_DEPTH_WIDTH_PCT, FALL_DEPTH_USDC);
  const liquidator = forkClient(world.fork.rpcUrl);
  await world.fork.fund(liquidator.account.address, 100_000_000n * USDC);
  await liquidator.waitForTransactionReceipt({
    hash: await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] }),
  });
  return liquidator;
}

export async function runFall(world: World, pop: Population, liquidator: ForkClient, o: FallOptions): Promise<FallRow> {
  const started = performance.now();
  const client = forkClient(world.fork.rpcUrl);
  const children: ChildProcess[] = [];
  const blocks = o.blocks ?? 8;
  const secondDropAfter = o.secondDropAfter ?? 3;
  const engineDir = "url" in o.database ? fs.mkdtempSync(path.join(os.tmpdir(), "fall-engine-")) : path.dirname(o.database.file);
  let killed = false;
  try {
    const engines: EngineProc[] = [];
    for (let i = 0; i < o.engines; i++)
      engines.push(await startEngine({ database: o.database, dataDir: engineDir, rpcUrl: world.fork.rpcUrl, automationKey: world.automationKey }, children));
    // the engines watch a block or two before the fall
    await world.anvil.mine({ blocks: 1 });
    await waitForEngines(world, engines, await client.getBlockNumber(), undefined, 300, 20_000, 0);

    // the fall: the feed and the pool in one block (the arbitrage's), then one block at a time
    // (automine off first: no engine's act lands before the fall block is mined)
    await world.anvil.setAutomine(false);
    await world.fork.setPrice("WETH", FALL_ETH);
    const arbitrage = arbitrageTo(world.fork.rpcUrl, "WETH", FALL_ETH);
    for (let t = Date.now(); Date.now() - t < 10_000; await sleep(20)) {
      const status = (await world.anvil.request({ method: "txpool_status" } as never)) as { pending: string | number };
      if (Number(status.pending) > 0) break;
    }
    await world.anvil.mine({ blocks: 1 });
    await arbitrage;
    const fallBlock = await client.getBlockNumber();
    let mined = 0;
    for (let i = 0; i < blocks; i++) {
      const at = fallBlock + BigInt(i);
      await waitForEngines(world, engines, at, (pending) => {
        if (o.killOne && !killed && pending > 0) {
          engines[0]!.child.kill("SIGKILL");
          killed = true;
        }
      });
      if (i === secondDropAfter) {
        await world.fork.setPrice("WETH", SECOND_DROP_ETH);
        void arbitrageTo(world.fork.rpcUrl, "WETH", SECOND_DROP_ETH).catch(() => undefined);
        await sleep(200);
      }
      await world.anvil.mine({ blocks: 1 });
      mined++;
      // Aave's verdict on every crossing Safe at this block: under 1, the liquidator's call goes in the next
      const accounts = await Promise.all(pop.crossing.map((s) => accountOf(client, s.safe)));
      for (const [k, a] of accounts.entries()) {
        if (a.debt === 0n || a.hf >= WAD) continue;
        await liquidator.writeContract({
          address: m.pool,
          abi: AAVE_LIQUIDATION_ABI,
          functionName: "liquidationCall",
          args: [m.weth, m.usdc, pop.crossing[k]!.safe, 2n ** 255n, false],
          gas: 2_000_000n,
        });
      }
    }
    await world.anvil.setAutomine(true);
    await world.anvil.mine({ blocks: 1 });
    mined++;
    for (const c of children) c.kill("SIGKILL");

    // the books
    const to = await client.getBlockNumber();
    const moduleOf = new Map(pop.crossing.map((s) => [s.module.toLowerCase(), s]));
    const logs = await client.getLogs({ address: pop.crossing.map((s) => s.module), fromBlock: fallBlock, toBlock: to });
    const deleverages = parseEventLogs({ abi: PROTECTION_MODULE_ABI, logs, eventName: "Deleveraged" });
    const firstBlock = new Map<string, bigint>();
    const acts = new Map<string, number>();
    for (const e of deleverages) {
      const s = moduleOf.get(e.address.toLowerCase())!;
      if (!firstBlock.has(s.safe)) firstBlock.set(s.safe, e.blockNumber);
      acts.set(s.safe, (acts.get(s.safe) ?? 0) + 1);
    }
    const liquidations = await client.getLogs({ address: m.pool, event: LIQUIDATION_EVENT, fromBlock: fallBlock, toBlock: to });
    const crossingSet = new Set(pop.crossing.map((s) => s.safe.toLowerCase()));
    const ours = liquidations.filter((l) => crossingSet.has(l.args.user!.toLowerCase()));
    const delays = [...firstBlock.values()].map((b) => Number(b - fallBlock)).sort((a, b) => a - b);
    const db = await openDatabase(o.database);
    const ids = pop.crossing.map((s) => s.treasuryId);
    const actions = await db.all<{ status: string; reason: string | null }>(
      `SELECT status, reason FROM protection_actions WHERE treasury_id IN (${ids.map(() => "?").join(",")})`,
      ...ids,
    );
    await db.close();
    const outcomes: Record<string, number> = {};
    // figures masked so that like reasons count together
    for (const a of actions) {
      const key = `${a.status}${a.reason ? `: ${a.reason.replace(/0x[0-9a-fA-F]+/g, "0x…").replace(/[0-9.]+/g, "#")}` : ""}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
    }
    return {
      safes: pop.crossing.length + 1 + pop.clones.length,
      crossing: pop.crossing.length,
      engines: o.engines,
      killed,
      engine_kind: engines.some((e) => e.passes.length > 0) ? "pass" : "tick",
      watched_per_engine: engines.map((e) => e.watched.at(-1) ?? 0),
      fall_block: Number(fallBlock),
      deleveraged: firstBlock.size,
      blocks_to_deleverage_median: delays.length ? delays[Math.floor((delays.length - 1) / 2)]! : null,
      blocks_to_deleverage_max: delays.length === pop.crossing.length ? delays.at(-1)! : null,
      within_2_blocks: delays.filter((d) => d <= 2).length,
      liquidations: ours.length,
      liquidated_safes: new Set(ours.map((l) => l.args.user!.toLowerCase())).size,
      deleverages: deleverages.length,
      acts_per_trigger_max: Math.max(0, ...acts.values()),
      recorded_actions: actions.filter((a) => a.status === "executed").length,
      action_outcomes: outcomes,
      blocks_mined: mined,
      wall_ms: Math.round(performance.now() - started),
    };
  } finally {
    for (const c of children) c.kill("SIGKILL");
    await world.anvil.setAutomine(true).catch(() => undefined);
    if ("url" in o.database) fs.rmSync(engineDir, { recursive: true, force: true });
  }
}
