/**
 * Watch figures: an engine in this process on the gateway's store (its queries counted) reading the chain
 * through the counting proxy (a fixed delay per request); a block mined, then one pass at that block, a few
 * times. Per block: the pass's time, the JSON-RPC requests and calls it made, the store queries.
 */
import type { CountingDb } from "./counting-db";
import { passOnce, type AnyEngine } from "./engine-adapter";
import type { RpcProxy } from "./rpc-proxy";
import type { World } from "./world";

export interface WatchRow {
  safes: number;
  latency_ms: number;
  engine: "pass" | "tick";
  passes: number;
  /** the Safes the engine said it watched (the fewest over the passes): all of them, or the bench measured a part */
  watched?: number;
  watch_ms_min: number;
  watch_ms_median: number;
  /** HTTP requests to the node per block (a batch is one), median over the passes */
  rpc_requests_per_block: number;
  /** JSON-RPC calls per block (each element of a batch), median */
  rpc_calls_per_block: number;
  rpc_requests_per_1000_safes: number;
  store_queries_per_block: number;
  /** calls per method of the last pass */
  by_method: Record<string, number>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * `passes` passes (after one warm-up pass not counted: the first pass reads every Safe), each at a new
 * block; stops early once the passes took `budgetMs` (an engine that walks every Safe takes minutes a pass at 10,000 Safes and 30 ms)
 */
export async function measureWatch(
  world: World,
  proxy: RpcProxy,
  watcher: { engine: AnyEngine; db: CountingDb },
  safes: number,
  latencyMs: number,
  passes: number,
  budgetMs = 120_000,
): Promise<WatchRow> {
  proxy.setDelay(latencyMs);
  const { engine, db } = watcher;
  const started = performance.now();
  // a first pass indexes the Safes new to the engine (every one, on its first block)
  await world.anvil.mine({ blocks: 1 });
  await passOnce(engine);
  const ms: number[] = [];
  const requests: number[] = [];
  const calls: number[] = [];
  const queries: number[] = [];
  const watched: number[] = [];
  let byMethod: Record<string, number> = {};
  for (let i = 0; i < passes; i++) {
    if (i > 0 && performance.now() - started > budgetMs) break;
    await world.anvil.mine({ blocks: 1 });
    const block = await world.anvil.request({ method: "eth_blockNumber" } as never).then((b) => BigInt(b as string));
    proxy.reset();
    db.reset();
    const r = await passOnce(engine, block);
    const c = proxy.counts();
    ms.push(r.ms);
    requests.push(c.requests);
    calls.push(c.calls);
    queries.push(db.queries());
    if (r.watched !== undefined) watched.push(r.watched);
    byMethod = c.byMethod;
  }
  const req = median(requests);
  return {
    safes,
    latency_ms: latencyMs,
    engine: "pass",
    passes: ms.length,
    watched: watched.length ? Math.min(...watched) : undefined,
    watch_ms_min: Math.round(Math.min(...ms)),
    watch_ms_median: Math.round(median(ms)),
    rpc_requests_per_block: req,
    rpc_calls_per_block: median(calls),
    rpc_requests_per_1000_safes: Math.round((req / safes) * 1000 * 10) / 10,
    store_queries_per_block: median(queries),
    by_method: byMethod,
  };
}
