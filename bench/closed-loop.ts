/**
 * A closed-loop load: `items.length` requests, `concurrency` at a time, each
 * sent by `send` (true = the answer was the expected one). For paths where
 * every request needs its own prepared input (an x402 proof is spent once),
 * which a load of one repeated request cannot give.
 */
export interface LoopFigures {
  count: number;
  concurrency: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  failures: number;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export async function closedLoop<T>(items: T[], concurrency: number, send: (item: T, index: number) => Promise<boolean>): Promise<LoopFigures> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        const t0 = performance.now();
        if (!(await send(items[i]!, i))) failures++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { count: items.length, concurrency, rps: items.length / elapsed, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), failures };
}
