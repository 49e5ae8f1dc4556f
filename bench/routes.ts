/**
 * The HTTP routes against a bare Express hello-world in its own process: each route and the baseline in
 * alternating slices (http-load.ts interleaved), the route's ratios against the baseline of its own slices;
 * with --profile each route on a fresh gateway under node --cpu-prof.
 */
import fs from "node:fs";
import path from "node:path";
import { CONNECTIONS, PROFILE, RESULTS, SECONDS, SLICES, WARMUP } from "./args";
import { interleaved, load, type LoadFigures, type Target } from "./http-load";
import { benchServer, startGatewayProcess, startProcess, urlOf } from "./processes";
import { hotSpots } from "./profile";
import { dir, json, keep } from "./session";

export interface Row extends LoadFigures {
  /** the baseline's throughput in this route's own slices */
  baseline_rps?: number;
  rps_ratio: number;
  p50_ratio: number;
  p99_ratio: number;
  goal?: string;
  profile?: ReturnType<typeof hotSpots>;
}

const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
const against = (r: LoadFigures, base: LoadFigures, goal?: string): Row => ({
  ...r,
  rps: Number(r.rps.toFixed(1)),
  rps_ratio: ratio(r.rps, base.rps),
  p50_ratio: ratio(r.p50_us, base.p50_us),
  p99_ratio: ratio(r.p99_us, base.p99_us),
  ...(goal ? { goal } : {}),
});

export /** the HTTP routes against the bare Express baseline, each gateway route with its goal */
async function routes(): Promise<{ baseline: LoadFigures; rows: Row[]; rss_kb?: { start: number; end: number } }> {
  const baseline = keep(await startProcess(benchServer("baseline.ts"), {}, /"url"/, path.join(dir, "baseline.log")));
  const baseUrl = urlOf(baseline.line);
  const opts = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP };
  const baseName = "express hello-world (baseline, own process)";
  const baseTarget = { url: `${baseUrl}/` };
  /** a route and the baseline in alternating slices; the route's ratios are against the baseline of its own slices */
  const paired = async (name: string, target: Target, goal: string | undefined, keepBase: LoadFigures[]): Promise<Row> => {
    const [b, r] = await interleaved({ name: baseName, target: baseTarget }, { name, target }, { ...opts, slices: SLICES });
    keepBase.push(b);
    return { ...against(r, b, goal), baseline_rps: Number(b.rps.toFixed(1)) };
  };

  let wallet = 0;
  const targets: { name: string; goal: string; target: (url: string) => Promise<Target> }[] = [
    { name: "GET /api/v1/public/gateway-status", goal: "rps >= 0.8x", target: async (u) => ({ url: `${u}/api/v1/public/gateway-status` }) },
    { name: "GET /fees.json", goal: "rps >= 0.8x", target: async (u) => ({ url: `${u}/fees.json` }) },
    { name: "GET /api/v1/public/liquidation-distance", goal: "rps >= 0.8x", target: async (u) => ({ url: `${u}/api/v1/public/liquidation-distance?ltv=55` }) },
    {
      name: "POST /api/v1/public/preview",
      goal: "rps >= 0.7x",
      target: async (u) => ({ url: `${u}/api/v1/public/preview`, body: () => JSON.stringify({ action: "borrow", amount: 1000, current_ltv: 40 }) }),
    },
    {
      name: "POST /api/v1/deposits (bearer, executes, audit + idempotency)",
      goal: "rps >= 0.5x",
      target: async (u) => {
        // one managed sandbox treasury per connection: the treasury's conflict slot is the business rule, not the load
        const keys = await Promise.all(
          Array.from({ length: CONNECTIONS }, async () => (await json(`${u}/api/v1/sandbox/keys`, { method: "POST" })).key as string),
        );
        let n = 0;
        const run = Date.now();
        return {
          url: `${u}/api/v1/deposits`,
          body: () => JSON.stringify({ amount_usdc: 100 }),
          headersOf: (i) => ({ authorization: `Bearer ${keys[i % keys.length]}`, "idempotency-key": `bench-${run}-${n++}` }),
        };
      },
    },
    {
      name: "POST /api/v1/treasuries",
      goal: "rps >= 0.5x",
      target: async (u) => ({
        url: `${u}/api/v1/treasuries`,
        body: () => JSON.stringify({ wallet_address: `0x${(++wallet).toString(16).padStart(40, "0")}` }),
      }),
    },
    { name: "GET /api/v1/health unpaid (402 challenge)", goal: "", target: async (u) => ({ url: `${u}/api/v1/health`, ok: (s) => s === 402 }) },
  ];

  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
  if (only) targets.splice(0, targets.length, ...targets.filter((t) => only.test(t.name)));
  const rows: Row[] = [];
  const bases: LoadFigures[] = [];
  let rss: { start: number; end: number } | undefined;
  if (PROFILE) {
    fs.mkdirSync(path.join(RESULTS, "profiles"), { recursive: true });
    for (const t of targets) {
      const profDir = fs.mkdtempSync(path.join(dir, "prof-"));
      const gw = await startGatewayProcess(dir, {}, ["--cpu-prof", `--cpu-prof-dir=${profDir}`]);
      const target = await t.target(gw.url);
      // the profile counts the measured load only: start-up, set-up and warm-up are left out
      const skipMs = performance.now() - gw.spawnedAt + 2 * WARMUP * 1000; // the baseline's warm-up, then the gateway's
      const r = await paired(t.name, target, t.goal || undefined, bases);
      await gw.stop();
      const file = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
      if (file) {
        r.profile = hotSpots(path.join(profDir, file), skipMs);
        fs.writeFileSync(
          path.join(RESULTS, "profiles", `${t.name.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}.json`),
          JSON.stringify(r.profile, null, 2),
        );
      }
      rows.push(r);
    }
  } else {
    const gw = keep(await startGatewayProcess(dir, {}));
    const rssOf = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${gw.proc.pid}/status`, "utf8"))?.[1] ?? NaN);
    const start = rssOf();
    for (const t of targets) rows.push(await paired(t.name, await t.target(gw.url), t.goal || undefined, bases));
    rss = { start, end: rssOf() };
    await gw.stop();
  }
  await baseline.stop();
  if (bases.length === 0) return { baseline: await load(baseName, baseTarget, opts), rows, rss_kb: rss };
  // the baseline's row: all its slices pooled (each route's ratios are against its own slices' baseline)
  const pooled = { ...bases[0]!, requests: bases.reduce((a, b) => a + b.requests, 0), seconds: bases.reduce((a, b) => a + b.seconds, 0) };
  pooled.rps = pooled.requests / pooled.seconds;
  const base: LoadFigures = {
    ...pooled,
    p50_us: Math.round(bases.reduce((a, b) => a + b.p50_us, 0) / bases.length),
    p90_us: Math.round(bases.reduce((a, b) => a + b.p90_us, 0) / bases.length),
    p99_us: Math.round(bases.reduce((a, b) => a + b.p99_us, 0) / bases.length),
  };
  return { baseline: base, rows: [against(base, base), ...rows], rss_kb: rss };
}
