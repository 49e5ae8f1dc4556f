/**
 * The load generator: `connections` keep-alive connections, each sending its
 * next request when the last answer is read (closed loop), for a duration or
 * over a list of prepared requests (an x402 proof is spent once). Latency is
 * timed with the monotonic clock in microseconds, so a ratio of two p50s is
 * always a number. It runs in the bench process; every server it loads runs
 * in its own (bench/processes.ts).
 */
import http from "node:http";

export interface Target {
  url: string;
  /** the URL of the i-th request, when requests go to several servers (default `url`) */
  urlOf?: (i: number) => string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  /** the body of the i-th request (POST) */
  body?: (i: number) => string;
  /** extra headers of the i-th request (an Idempotency-Key...), sent by client `client` (its own closed loop: a session's vouchers) */
  headersOf?: (i: number, client: number) => Record<string, string>;
  /** the expected status (default: any 2xx) */
  ok?: (status: number, body: string) => boolean;
}

export interface LoadFigures {
  name: string;
  requests: number;
  connections: number;
  seconds: number;
  rps: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  /** answers that were not the expected one */
  failures: number;
}

export const percentileOf = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

function send(agent: http.Agent, t: Target, i: number, client: number): Promise<{ status: number; body: string }> {
  const body = t.body?.(i);
  const headers: Record<string, string> = { ...t.headers, ...t.headersOf?.(i, client) };
  if (body !== undefined) {
    headers["content-type"] ??= "application/json";
    headers["content-length"] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(t.urlOf?.(i) ?? t.url, { method: t.method ?? (body === undefined ? "GET" : "POST"), headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * Load `t` with `connections` closed loops: for `seconds` (after `warmupSeconds` not counted), or, with
 * `count`, until `count` requests were sent (request i gets index i: its own body or proof).
 */
export async function load(
  name: string,
  t: Target,
  opts: { connections: number; seconds?: number; warmupSeconds?: number; count?: number; keep?: number[] },
): Promise<LoadFigures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  let next = 0;
  const run = async (until: () => boolean, record: boolean, latencies: number[], failures: { n: number }) => {
    await Promise.all(
      Array.from({ length: opts.connections }, async (_, client) => {
        while (until()) {
          const i = next++;
          const t0 = process.hrtime.bigint();
          try {
            const r = await send(agent, t, i, client);
            const dt = Number(process.hrtime.bigint() - t0) / 1000;
            if (record) latencies.push(dt);
            if (!(t.ok ? t.ok(r.status, r.body) : r.status >= 200 && r.status < 300) && record) failures.n++;
          } catch {
            if (record) failures.n++;
          }
        }
      }),
    );
  };
  try {
    if (opts.warmupSeconds && opts.count === undefined) {
      const end = performance.now() + opts.warmupSeconds * 1000;
      await run(() => performance.now() < end, false, [], { n: 0 });
    }
    const latencies: number[] = [];
    const failures = { n: 0 };
    const started = performance.now();
    if (opts.count !== undefined) {
      const total = opts.count;
      next = 0;
      await run(() => next < total, true, latencies, failures);
    } else {
      const end = started + (opts.seconds ?? 5) * 1000;
      await run(() => performance.now() < end, true, latencies, failures);
    }
    const seconds = (performance.now() - started) / 1000;
    opts.keep?.push(...latencies);
    return figuresOf(name, opts.connections, latencies, seconds, failures.n);
  } finally {
    agent.destroy();
  }
}

export function figuresOf(name: string, connections: number, latencies: number[], seconds: number, failures: number): LoadFigures {
  latencies.sort((a, b) => a - b);
  return {
    name,
    requests: latencies.length,
    connections,
    seconds: Number(seconds.toFixed(3)),
    rps: latencies.length / seconds,
    p50_us: Math.round(percentileOf(latencies, 50)),
    p90_us: Math.round(percentileOf(latencies, 90)),
    p99_us: Math.round(percentileOf(latencies, 99)),
    failures,
  };
}

/**
 * Two servers loaded in alternating slices over the same stretch of time (each warmed up once, then
 * `slices` turns of `seconds / slices` each): on a machine whose speed drifts (this 2-core VM's moved
 * a bare Express by 30-40% between runs a minute apart), both see the same drift, so their ratio holds
 * where two runs one after the other would not. Returns the pooled figures of each.
 */
export async function interleaved(
  a: { name: string; target: Target },
  b: { name: string; target: Target },
  opts: { connections: number; seconds: number; warmupSeconds?: number; slices: number },
): Promise<[LoadFigures, LoadFigures]> {
  const pooled = [a, b].map(() => ({ latencies: [] as number[], seconds: 0, failures: 0 }));
  for (const s of [a, b]) await load(s.name, s.target, { connections: opts.connections, seconds: 0, warmupSeconds: opts.warmupSeconds });
  for (let i = 0; i < opts.slices; i++) {
    for (const [k, s] of [a, b].entries()) {
      const r = await load(s.name, s.target, { connections: opts.connections, seconds: opts.seconds / opts.slices, keep: pooled[k]!.latencies });
      pooled[k]!.seconds += r.seconds;
      pooled[k]!.failures += r.failures;
    }
  }
  const [pa, pb] = pooled.map((p, k) => figuresOf([a, b][k]!.name, opts.connections, p.latencies, p.seconds, p.failures));
  return [pa!, pb!];
}
