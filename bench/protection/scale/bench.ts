/**
 * npm run bench -- --protection-scale: the protection engine at scale on the offline Base fork.
 *
 * 1. Watch: N watched Safes (100, 1,000, 10,000; BENCH_SCALE_SAFES="100,1000" to choose), 5% of them real
 *    (made through the Operator and the gateway's API: the ones that cross in the fall), one real healthy
 *    template and the rest cloned from it with state writes (population.ts). An engine in this process on the
 *    gateway's store (queries counted) reads through a JSON-RPC proxy (requests counted, a fixed delay of 0 or
 *    30 ms; rpc-proxy.ts): per block, the pass's time (min, median), requests and store queries (watch.ts).
 * 2. The fall at BENCH_SCALE_FALL_SAFES (1,000): its 5% cross in the same block; engines as processes, 1, 2, 3
 *    and 3 with one killed (kill -9) mid-fall, each from the same chain (evm_snapshot / evm_revert) and a copy
 *    of the same store (fall.ts).
 *
 * Printed as tables, saved in bench/results/protection-scale-latest.json.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { RESULTS } from "../../args";
import type { CountingDb } from "./counting-db";
import { newEngine, type AnyEngine } from "./engine-adapter";
import { prepareFall, populate, runFall, type FallRow, type Population } from "./fall";
import { startRpcProxy } from "./rpc-proxy";
import { measureWatch, type WatchRow } from "./watch";
import { startWorld, type World } from "./world";

const SAFES = (process.env.BENCH_SCALE_SAFES ?? "100,1000,10000").split(",").map(Number);
const LATENCIES = (process.env.BENCH_SCALE_LATENCIES ?? "0,30").split(",").map(Number);
const FALL_SAFES = Number(process.env.BENCH_SCALE_FALL_SAFES ?? 1000);
/** the fall's runs: engines, "k" for one of them killed ("" for none) */
const FALL_RUNS = (process.env.BENCH_SCALE_FALLS ?? "1,2,3,3k").split(",").filter(Boolean);

/** the goals the engine is measured against (bench/README.md) */
export const GOALS = {
  watch_ms_at_30ms: { 1000: 1000, 10000: 2000 } as Record<number, number>,
  rpc_requests_per_block_per_1000_healthy: 20,
  blocks_to_deleverage_max: 2,
  liquidations: 0,
  acts_per_trigger: 1,
};

export interface ScaleResult {
  made: (Population["made"] & { safes: number })[];
  watch: (WatchRow | { safes: number; latency_ms: number; skipped: string })[];
  fall: (FallRow | { engines: number; killed: boolean; error: string })[];
  goals: typeof GOALS;
}

/** the results so far (after each part: a run that fails later keeps what it measured) */
function save(result: ScaleResult): void {
  fs.mkdirSync(RESULTS, { recursive: true });
  fs.writeFileSync(
    path.join(RESULTS, "protection-scale-latest.json"),
    `${JSON.stringify({ at: new Date().toISOString(), cores: os.cpus().length, ...result }, null, 1)}\n`,
  );
}

async function storeCopy(world: World): Promise<{ file: string }> {
  if ("url" in world.database) throw new Error("the scale bench copies a SQLite store per fall run");
  await world.gw.ctx.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fall-store-"));
  fs.copyFileSync(world.database.file, path.join(dir, "gateway.sqlite"));
  return { file: path.join(dir, "gateway.sqlite") };
}

async function falls(world: World, pop: Population, out: ScaleResult["fall"]): Promise<void> {
  const liquidator = await prepareFall(world);
  for (const run of FALL_RUNS) {
    const engines = Number.parseInt(run, 10);
    const killOne = run.endsWith("k");
    const snapshot = (await world.anvil.request({ method: "evm_snapshot" } as never)) as string;
    const database = await storeCopy(world);
    try {
      const r = await runFall(world, pop, liquidator, { engines, killOne, database });
      out.push(r);
      printFall([r]);
      process.stdout.write(`  the store's actions: ${JSON.stringify(r.action_outcomes)}\n`);
    } catch (err) {
      out.push({ engines, killed: killOne, error: err instanceof Error ? err.message : String(err) });
      process.stdout.write(`fall with ${run} engines failed: ${String(err)}\n`);
    } finally {
      await world.anvil.request({ method: "evm_revert", params: [snapshot] } as never);
      fs.rmSync(path.dirname(database.file), { recursive: true, force: true });
    }
  }
}

export async function protectionScale(): Promise<ScaleResult> {
  const result: ScaleResult = { made: [], watch: [], fall: [], goals: GOALS };
  const world = await startWorld();
  const proxy = await startRpcProxy(world.fork.rpcUrl);
  try {
    let pop: Population | undefined;
    let watcher: { engine: AnyEngine; db: CountingDb } | undefined;
    const sizes = [...new Set([...SAFES, ...(FALL_RUNS.length > 0 && FALL_SAFES > 0 ? [FALL_SAFES] : [])])].sort((a, b) => a - b);
    for (const n of sizes) {
      pop = await populate(world, n, Math.ceil(n * 0.05), 8, pop);
      result.made.push({ safes: n, ...pop.made });
      process.stdout.write(
        `${n} Safes: ${pop.made.real_safes} real in ${(pop.made.real_ms_total / 1000).toFixed(1)} s (${pop.made.real_ms_each} ms each), ${pop.made.clones} cloned in ${(pop.made.clone_ms_total / 1000).toFixed(1)} s (${pop.made.clone_ms_each} ms each)\n`,
      );
      if (SAFES.includes(n)) {
        // one engine for every size and delay (the proxy's delay changes under it): a new engine per
        // measurement would share the shards with the last one until its lease lapsed
        watcher ??= await (async () => {
          const { ctx, db } = await world.engineContext();
          return { engine: newEngine(ctx, proxy.url, world.automationKey), db };
        })();
        for (const latency of LATENCIES) {
          const row = await measureWatch(world, proxy, watcher, n, latency, 5);
          result.watch.push(row);
          printWatch([row]);
          save(result);
        }
      }
      if (n === FALL_SAFES) await falls(world, pop, result.fall);
      save(result);
    }
    await watcher?.engine.stop();
  } finally {
    await proxy.close();
    await world.close();
  }
  save(result);
  process.stdout.write("\n");
  printWatch(result.watch);
  printFall(result.fall);
  return result;
}

const goalWatch = (w: WatchRow) => (w.latency_ms === 30 && GOALS.watch_ms_at_30ms[w.safes] ? `< ${GOALS.watch_ms_at_30ms[w.safes]} ms` : "");

export function printWatch(rows: ScaleResult["watch"]): void {
  process.stdout.write(
    "| Safes | delay | engine | passes | watch ms min / median | goal | RPC requests / calls a block | requests per 1,000 Safes (goal <= 20) | store queries a block |\n|---|---|---|---|---|---|---|---|---|\n",
  );
  for (const w of rows) {
    if ("skipped" in w) {
      process.stdout.write(`| ${w.safes} | ${w.latency_ms} ms | | | ${w.skipped} | | | | |\n`);
      continue;
    }
    process.stdout.write(
      `| ${w.safes}${w.watched !== undefined && w.watched < w.safes ? ` (watched ${w.watched})` : ""} | ${w.latency_ms} ms | ${w.engine} | ${w.passes} | ${w.watch_ms_min} / ${w.watch_ms_median} | ${goalWatch(w)} | ${w.rpc_requests_per_block} / ${w.rpc_calls_per_block} | ${w.rpc_requests_per_1000_safes} | ${w.store_queries_per_block} |\n`,
    );
  }
}

export function printFall(rows: ScaleResult["fall"]): void {
  process.stdout.write(
    "| Safes | crossing | engines | deleveraged | within 2 blocks | blocks to deleverage median / max | liquidated (calls) | acts per trigger max | recorded | Safes each engine watched | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
  );
  for (const f of rows) {
    const engines = `${f.engines}${f.killed ? ", one killed" : ""}`;
    if ("error" in f) {
      process.stdout.write(`| | | ${engines} | ${f.error} | | | | | | | |\n`);
      continue;
    }
    process.stdout.write(
      `| ${f.safes} | ${f.crossing} | ${engines} (${f.engine_kind}) | ${f.deleveraged} | ${f.within_2_blocks} | ${f.blocks_to_deleverage_median ?? "-"} / ${f.blocks_to_deleverage_max ?? "not all"} | ${f.liquidated_safes} (${f.liquidations}) | ${f.acts_per_trigger_max} | ${f.recorded_actions} | ${(f.watched_per_engine ?? []).join(" / ")} | ${(f.wall_ms / 1000).toFixed(1)} |\n`,
    );
  }
}
