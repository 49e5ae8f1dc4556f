/**
 * npm run bench: every server in its own process, started as production
 * starts it (bench/processes.ts), loaded from this process (bench/http-load.ts,
 * latency in microseconds), with a bare Express hello-world and, for the paid
 * path, x402-express's own middleware measured in the same run; ratios are
 * against those. Prints a table and writes bench/results/<time>.json (and
 * latest.json; --quick writes quick-latest.json).
 *
 *   --quick     under a minute: 1 s per route, the paid path at one concurrency, no fork, no instances
 *   --routes-only  only the HTTP routes against the baseline
 *   --tables    only the routes on an empty and on a full store, SQLite and PostgreSQL (bench/tables.ts)
 *   --wallet-loop  only the wallet loop on the fork: relays with broadcast (one wallet, then many at once), the agent's loop
 *   --profile   only the HTTP routes, each on a fresh gateway under node --cpu-prof: the top self-time
 *               functions of the measured load in the JSON and bench/results/profiles/
 *   BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_PAID_REQUESTS tune it; BENCH_ONLY (a regular expression)
 *   keeps only the HTTP routes whose name matches.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../fixtures/anvil";
import { figuresOf, interleaved, load, percentileOf, type LoadFigures, type Target } from "./http-load";
import { benchServer, cpuPerRequest, ROOT, startFacilitatorProcess, startGatewayProcess, startProcess, urlOf, type ServerProcess } from "./processes";
import { hotSpots } from "./profile";

const QUICK = process.argv.includes("--quick");
const PROFILE = process.argv.includes("--profile");
const ROUTES_ONLY = PROFILE || process.argv.includes("--routes-only");
const TABLES_ONLY = process.argv.includes("--tables");
const LOOP_ONLY = process.argv.includes("--wallet-loop");
const PAID_ONLY = process.argv.includes("--paid");
const SECONDS = QUICK ? 1 : Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = QUICK ? 0.3 : 1;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** each route and the baseline alternate in this many slices of SECONDS / SLICES (http-load.ts interleaved) */
const SLICES = QUICK ? 2 : Number(process.env.BENCH_SLICES ?? 5);
const PAID_CONCURRENCY = QUICK ? [4] : [4, 16, 64];
/**
 * The paid rows of one concurrency (the stock middleware, the gateway's v1, its v2) take turns, each turn in
 * another order, so that each is measured as often early as late on the chain their settlements grow
 * (Anvil's CPU per settlement grows with it: in run F, always in the same order, 13.2 / 15.6 / 17.9 ms at 64).
 */
const PAID_TURNS = QUICK ? 1 : Number(process.env.BENCH_PAID_TURNS ?? 3);
const RESULTS = path.join(ROOT, "bench", "results");

interface Row extends LoadFigures {
  /** the baseline's throughput in this route's own slices */
  baseline_rps?: number;
  rps_ratio: number;
  p50_ratio: number;
  p99_ratio: number;
  goal?: string;
  profile?: ReturnType<typeof hotSpots>;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-"));
const servers: ServerProcess[] = [];
const keep = <T extends ServerProcess>(s: T): T => (servers.push(s), s);
const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
const against = (r: LoadFigures, base: LoadFigures, goal?: string): Row => ({
  ...r,
  rps: Number(r.rps.toFixed(1)),
  rps_ratio: ratio(r.rps, base.rps),
  p50_ratio: ratio(r.p50_us, base.p50_us),
  p99_ratio: ratio(r.p99_us, base.p99_us),
  ...(goal ? { goal } : {}),
});

async function json(url: string, init?: RequestInit): Promise<any> {
  const r = await fetch(url, init);
  return r.json();
}

/** the HTTP routes against the bare Express baseline, each gateway route with its goal */
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
        const keys = await Promise.all(Array.from({ length: CONNECTIONS }, async () => (await json(`${u}/api/v1/sandbox/keys`, { method: "POST" })).key as string));
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
      target: async (u) => ({ url: `${u}/api/v1/treasuries`, body: () => JSON.stringify({ wallet_address: `0x${(++wallet).toString(16).padStart(40, "0")}` }) }),
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
        fs.writeFileSync(path.join(RESULTS, "profiles", `${t.name.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}.json`), JSON.stringify(r.profile, null, 2));
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
  const base: LoadFigures = { ...pooled, p50_us: Math.round(bases.reduce((a, b) => a + b.p50_us, 0) / bases.length), p90_us: Math.round(bases.reduce((a, b) => a + b.p90_us, 0) / bases.length), p99_us: Math.round(bases.reduce((a, b) => a + b.p99_us, 0) / bases.length) };
  return { baseline: base, rows: [against(base, base), ...rows], rss_kb: rss };
}

/** the paid path: the gateway (v1, v2, MCP) and x402-express's own middleware, same facilitator, same route and price */
async function paid() {
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { createPaymentHeader } = await import("x402/client");
  const { x402Client } = await import("@x402/core/client");
  const { registerExactEvmScheme } = await import("@x402/evm/exact/client");
  const { createWalletClient, http } = await import("viem");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const { baseSepolia } = await import("viem/chains");

  let chain = await startBaseSepolia();
  try {
    const facilitatorPort = await freePort();
    let facilitator = keep(await startFacilitatorProcess(dir, chain.rpcUrl, facilitatorPort));
    const payTo = devAccount(2).address;
    const gw = keep(await startGatewayProcess(dir, { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: payTo }));
    const price = ((await json(`${gw.url}/x402/prices.json`)).prices as { method: string; path: string; amount_atomic: string }[]).find((p) => p.path === "/api/v1/health")!.amount_atomic;
    const stock = keep(await startProcess(benchServer("stock-x402.ts"), { STOCK_FACILITATOR_URL: facilitator.url, STOCK_PAY_TO: payTo, STOCK_PRICE_ATOMIC: price }, /"url"/, path.join(dir, "stock.log")));
    const stockUrl = urlOf(stock.line);

    const account = privateKeyToAccount(generatePrivateKey());
    await chain.fund(account.address, 10_000_000_000n);
    const wallet = createWalletClient({ account, chain: baseSepolia, transport: http(chain.rpcUrl) });
    const challengeOf = async (url: string) => {
      const r = await fetch(url);
      return { v1: ((await r.json()) as { accepts: Parameters<typeof createPaymentHeader>[2][] }).accepts[0]!, v2: r.headers.get("payment-required") };
    };
    const gwChallenge = await challengeOf(`${gw.url}/api/v1/health`);
    const stockChallenge = await challengeOf(`${stockUrl}/api/v1/health`);
    const v2 = new x402Client();
    registerExactEvmScheme(v2, { signer: account });
    const requiredV2 = JSON.parse(Buffer.from(gwChallenge.v2!, "base64").toString());
    // the payer's first paid call creates its treasury: once, before the load
    await fetch(`${gw.url}/api/v1/health`, { headers: { "x-payment": await createPaymentHeader(wallet as never, 1, gwChallenge.v1) } }).then((r) => r.arrayBuffer());

    const rows: (LoadFigures & { server: string; version: string; cpu_ms_per_request?: Record<string, number>; machine_busy_pct?: number; turns?: number })[] = [];
    /** the processes of a row, read when it is measured (the chain and the facilitator are new at each number of clients) */
    const pids = (server: ServerProcess) => () => ({ server: server.proc.pid, facilitator: facilitator.proc.pid, anvil: (chain as unknown as { process?: { pid?: number } }).process?.pid });
    type Paid = { server: string; version: string; url: string; pids: ReturnType<typeof pids>; proofs: (n: number) => Promise<Record<string, string>[]> };
    const v1For = (challenge: typeof gwChallenge.v1) => async (n: number) => (await Promise.all(Array.from({ length: n }, () => createPaymentHeader(wallet as never, 1, challenge)))).map((p) => ({ "x-payment": p }));
    const paidServers: Paid[] = [
      { server: "x402-express (stock)", version: "v1", url: `${stockUrl}/api/v1/health`, pids: pids(stock), proofs: v1For(stockChallenge.v1) },
      { server: "gateway", version: "v1", url: `${gw.url}/api/v1/health`, pids: pids(gw), proofs: v1For(gwChallenge.v1) },
      {
        server: "gateway",
        version: "v2",
        url: `${gw.url}/api/v1/health`,
        pids: pids(gw),
        proofs: async (n) => Promise.all(Array.from({ length: n }, async () => ({ "payment-signature": Buffer.from(JSON.stringify(await v2.createPaymentPayload(requiredV2))).toString("base64") }))),
      },
    ];
    for (const [level, c] of PAID_CONCURRENCY.entries()) {
      if (level > 0) {
        // each number of clients on a fresh chain (and a facilitator started on it, on the same port): Anvil's CPU
        // per settlement grows with the settlements the chain holds (5.4 to 13.5 ms over 2,000 payments at 16 clients,
        // bench/README.md item 41), so the last number of clients was measured on the heaviest chain
        await facilitator.stop();
        await chain.stop();
        chain = await startBaseSepolia();
        await chain.fund(account.address, 10_000_000_000n);
        facilitator = keep(await startFacilitatorProcess(dir, chain.rpcUrl, facilitatorPort));
        // one paid request per server first (not counted): each opens its connections to the new facilitator
        for (const s of paidServers.slice(0, 2)) await fetch(s.url, { headers: (await s.proofs(1))[0] }).then((r) => r.arrayBuffer());
      }
      const count = QUICK ? 40 : Math.max(Number(process.env.BENCH_PAID_REQUESTS ?? 200), c * 6);
      // each turn's slice keeps every client busy for a few requests (a slice's start and end, with fewer
      // clients busy, are the same share of every row)
      const perTurn = Math.max(Math.ceil(count / PAID_TURNS), c * 3);
      const pooled = paidServers.map(() => ({ latencies: [] as number[], seconds: 0, failures: 0, requests: 0, busy: 0, cpu: {} as Record<string, number> }));
      for (let turn = 0; turn < PAID_TURNS; turn++) {
        for (let k = 0; k < paidServers.length; k++) {
          const at = (k + turn) % paidServers.length;
          const s = paidServers[at]!;
          const p = pooled[at]!;
          const proofs = await s.proofs(perTurn); // signed before the slice's load
          const r = await cpuPerRequest(s.pids(), () => load(`${s.server} ${s.version} c=${c}`, { url: s.url, headersOf: (i) => proofs[i]! }, { connections: c, count: perTurn, keep: p.latencies }));
          p.seconds += r.seconds;
          p.failures += r.failures;
          p.requests += r.requests;
          p.busy += r.machine_busy_pct * r.seconds;
          for (const [name, ms] of Object.entries(r.cpu_ms_per_request)) p.cpu[name] = (p.cpu[name] ?? 0) + ms * r.requests;
        }
      }
      for (const [k, s] of paidServers.entries()) {
        const p = pooled[k]!;
        rows.push({
          server: s.server,
          version: s.version,
          ...figuresOf(`${s.server} ${s.version} c=${c}`, c, p.latencies, p.seconds, p.failures),
          cpu_ms_per_request: Object.fromEntries(Object.entries(p.cpu).map(([name, total]) => [name, Number((total / Math.max(1, p.requests)).toFixed(2))])),
          machine_busy_pct: Number((p.busy / p.seconds).toFixed(0)),
          turns: PAID_TURNS,
        });
      }
      if (c === PAID_CONCURRENCY[0]) {
        const mcpPayments = await Promise.all(Array.from({ length: count }, () => v2.createPaymentPayload(requiredV2)));
        rows.push({
          server: "gateway",
          version: "v2 over MCP",
          ...(await load(
            `gateway MCP tools/call get_health c=${c}`,
            {
              url: `${gw.url}/api/mcp`,
              headers: { accept: "application/json, text/event-stream" },
              body: (i) => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_health", arguments: {}, _meta: { "x402/payment": mcpPayments[i] } } }),
              ok: (s, b) => s === 200 && b.includes("x402/payment-response") && !b.includes('"isError":true'),
            },
            { connections: c, count },
          )),
        });
      }
    }
    for (const s of [stock, gw, facilitator]) await s.stop();
    return rows;
  } finally {
    await chain.stop();
  }
}

/** relay verify + persist (no chain: the sandbox ledger), many treasuries at once */
async function relayNoBroadcast(): Promise<LoadFigures & { profile?: ReturnType<typeof hotSpots> }> {
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const profDir = fs.mkdtempSync(path.join(dir, "prof-"));
  const gw = keep(await startGatewayProcess(dir, {}, PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []));
  const n = QUICK ? 60 : 600;
  const prepared = await Promise.all(
    Array.from({ length: n }, async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const t = await json(`${gw.url}/api/v1/treasuries`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ wallet_address: account.address }) });
      const env = await json(`${gw.url}/api/v1/deposits`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${t.api_key}`, "idempotency-key": `bench-relay-${account.address}` }, body: JSON.stringify({ amount_usdc: 1000 }) });
      if (!Array.isArray(env.steps)) throw new Error(`the relay's deposit did not answer an envelope: ${JSON.stringify(env)}`);
      const step = env.steps[0];
      const u = step.unsigned_transaction;
      const signed = await account.signTransaction({ type: "eip1559", chainId: u.chain_id, nonce: 0, to: u.to, data: u.data, value: BigInt(u.value), gas: 300_000n, maxFeePerGas: 1_000_000_000n, maxPriorityFeePerGas: 1_000_000n });
      return JSON.stringify({ tx_id: step.tx_id, signed_transaction: signed });
    }),
  );
  const skipMs = performance.now() - gw.spawnedAt;
  const r = await load("POST /api/v1/relay (verify + persist, no broadcast)", { url: `${gw.url}/api/v1/relay`, body: (i) => prepared[i]!, headersOf: (i) => ({ "idempotency-key": `bench-relay-step-${i}` }) }, { connections: CONNECTIONS, count: n });
  await gw.stop();
  const file = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) return r;
  const profile = hotSpots(path.join(profDir, file), skipMs);
  fs.writeFileSync(path.join(RESULTS, "profiles", "POST_api_v1_relay.json"), JSON.stringify(profile, null, 2));
  return { ...r, profile };
}

/** the wallet loop on the offline Base fork: relay with broadcast and receipt, and the signer agent's full loop */
async function walletLoop() {
  const { startBaseFork } = await import("../fixtures/base-fork");
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { SignerAgent } = await import("../signer-agent/src/agent");
  const { AuditLog } = await import("../signer-agent/src/audit-log");
  const { defaultPolicy } = await import("../signer-agent/src/policy");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");

  const [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  try {
    const facilitator = keep(await startFacilitatorProcess(dir, sepolia.rpcUrl, await freePort()));
    const feeRecipient = devAccount(4).address;
    const gw = keep(await startGatewayProcess(dir, { BASE_RPC_URL: fork.rpcUrl, X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: devAccount(2).address, FEE_RECIPIENT: feeRecipient }));
    const privateKey = generatePrivateKey();
    const account = privateKeyToAccount(privateKey);
    await fork.fund(account.address, 1_000_000_000_000n);
    await sepolia.fund(account.address, 100_000_000n);
    const policy = { ...defaultPolicy([feeRecipient]), x402_daily_budget_usdc: 1000 };
    const agent = new SignerAgent({ privateKey, gatewayUrl: gw.url, rpcUrl: fork.rpcUrl, x402RpcUrl: sepolia.rpcUrl, policy, audit: new AuditLog(path.join(dir, "audit.jsonl")) });
    const full: number[] = [];
    for (let i = 0; i < Number(process.env.BENCH_LOOP_RUNS ?? 10); i++) {
      const t0 = performance.now();
      await agent.run("deposit", 100);
      full.push(performance.now() - t0);
    }
    const relays: number[] = [];
    for (let i = 0; i < Number(process.env.BENCH_RELAY_ROUNDS ?? 15); i++) {
      const envelope = await agent.request("borrow", 1);
      for (const step of envelope.steps) {
        const signed = await agent.signStep(step);
        const t0 = performance.now();
        await agent.relay(step.tx_id, signed);
        relays.push(performance.now() - t0);
      }
    }
    relays.sort((a, b) => a - b);
    full.sort((a, b) => a - b);

    // many wallets at once: each wallet's deposit envelope relayed step after step (its nonces), the wallets
    // side by side; steps signed beforehand with a fixed gas limit (the agent's preflight is not what is measured)
    const wallets = Number(process.env.BENCH_RELAY_WALLETS ?? 40);
    const workers = Number(process.env.BENCH_RELAY_WORKERS ?? 10);
    const accounts = Array.from({ length: wallets }, () => privateKeyToAccount(generatePrivateKey()));
    for (const a of accounts) await fork.fund(a.address, 1_000_000_000n); // one minter: its transactions one by one
    const signedSteps = await Promise.all(
      accounts.map(async (a) => {
        const t = await json(`${gw.url}/api/v1/treasuries`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ wallet_address: a.address }) });
        const env = await json(`${gw.url}/api/v1/deposits`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${t.api_key}`, "idempotency-key": `bench-many-${a.address}` }, body: JSON.stringify({ amount_usdc: 100 }) });
        if (!Array.isArray(env.steps)) throw new Error(`no envelope for the concurrent relays: ${JSON.stringify(env)}`);
        return Promise.all(
          env.steps.map(async (step: any) => {
            const u = step.unsigned_transaction;
            const signed = await a.signTransaction({ type: "eip1559", chainId: u.chain_id, nonce: u.nonce, to: u.to, data: u.data, value: BigInt(u.value), gas: 600_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n });
            return JSON.stringify({ tx_id: step.tx_id, signed_transaction: signed });
          }),
        );
      }),
    );
    const many: number[] = [];
    let next = 0;
    let manyFailures = 0;
    const t0many = performance.now();
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (let w = next++; w < signedSteps.length; w = next++) {
          for (const [i, body] of signedSteps[w]!.entries()) {
            const t0 = performance.now();
            const r = await fetch(`${gw.url}/api/v1/relay`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": `bench-many-${w}-${i}` }, body });
            const answer = await r.text();
            if (r.status !== 200 && manyFailures++ === 0) console.error(`a concurrent relay failed (wallet ${w}, step ${i}): ${r.status} ${answer.slice(0, 400)}`);
            many.push(performance.now() - t0);
          }
        }
      }),
    );
    const manySeconds = (performance.now() - t0many) / 1000;
    many.sort((a, b) => a - b);
    for (const s of [gw, facilitator]) await s.stop();
    const total = relays.reduce((a, b) => a + b, 0) / 1000;
    return {
      relay_broadcast: { count: relays.length, per_second_sequential: Number((relays.length / total).toFixed(1)), p50_ms: Number(percentileOf(relays, 50).toFixed(1)), p99_ms: Number(percentileOf(relays, 99).toFixed(1)) },
      relay_broadcast_many_wallets: { wallets, workers, count: many.length, failures: manyFailures, per_second: Number(((many.length - manyFailures) / manySeconds).toFixed(1)), p50_ms: Number(percentileOf(many, 50).toFixed(1)), p99_ms: Number(percentileOf(many, 99).toFixed(1)) },
      agent_loop: { runs: full.length, p50_ms: Math.round(percentileOf(full, 50)), p90_ms: Math.round(percentileOf(full, 90)), max_ms: Math.round(full[full.length - 1]!) },
    };
  } finally {
    await Promise.all([fork.stop(), sepolia.stop()]);
  }
}

/** RSS of one gateway under a mixed load for `seconds` (public reads, previews, treasury registrations, deposits), sampled every 5 s */
async function soak(seconds: number) {
  const gw = keep(await startGatewayProcess(dir, {}));
  const rss = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${gw.proc.pid}/status`, "utf8"))?.[1] ?? NaN) / 1024);
  const keys = [(await json(`${gw.url}/api/v1/sandbox/keys`, { method: "POST" })).key as string];
  const samples: { at_s: number; rss_mb: number }[] = [{ at_s: 0, rss_mb: rss() }];
  const t0 = performance.now();
  const timer = setInterval(() => samples.push({ at_s: Math.round((performance.now() - t0) / 1000), rss_mb: rss() }), 5000);
  let n = 0;
  const opts = { connections: 3, seconds };
  const loads = await Promise.all([
    load("soak gateway-status", { url: `${gw.url}/api/v1/public/gateway-status` }, opts),
    load("soak preview", { url: `${gw.url}/api/v1/public/preview`, body: () => JSON.stringify({ action: "deposit", amount: 1000 }) }, opts),
    load("soak treasuries", { url: `${gw.url}/api/v1/treasuries`, body: () => JSON.stringify({ wallet_address: `0x${(0xb0000000 + n++).toString(16).padStart(40, "0")}` }) }, opts),
    // one treasury's actions are serialized by its conflict slot: one connection
    load("soak deposits", { url: `${gw.url}/api/v1/deposits`, body: () => JSON.stringify({ amount_usdc: 100 }), headersOf: (i) => ({ authorization: `Bearer ${keys[0]}`, "idempotency-key": `soak-${i}-${n++}` }) }, { ...opts, connections: 1 }),
  ]);
  clearInterval(timer);
  samples.push({ at_s: Math.round((performance.now() - t0) / 1000), rss_mb: rss() });
  await gw.stop();
  return { seconds, requests: loads.reduce((a, l) => a + l.requests, 0), failures: loads.reduce((a, l) => a + l.failures, 0), samples };
}

/** the routes on an empty store and on a full one (bench/tables.ts), SQLite and PostgreSQL */
async function tables(result: Record<string, unknown>): Promise<void> {
  const { benchTables, TABLE_ROWS } = await import("./tables");
  const figures = await benchTables(dir, { connections: CONNECTIONS, seconds: Math.min(SECONDS, 3), warmupSeconds: WARMUP });
  result.tables = figures;
  console.log(`
cost as the work grows: ${TABLE_ROWS.treasuries.toLocaleString("en")} treasuries, ${TABLE_ROWS.fee_audit.toLocaleString("en")} fee-audit rows, ${TABLE_ROWS.idempotency_keys.toLocaleString("en")} idempotency records (p50 full / p50 empty: 1.00 = no growth):`);
  for (const f of figures) {
    console.log(`  ${f.store} (seeded in ${f.seed_seconds} s)`);
    for (const r of f.routes) console.log(`    ${r.name.padEnd(40)} empty p50 ${fmt(r.empty.p50_us, 7)} us, ${fmt(r.empty.rps, 6)} req/s; full p50 ${fmt(r.full.p50_us, 7)} us, ${fmt(r.full.rps, 6)} req/s; growth ${r.p50_growth.toFixed(2)}`);
  }
}

function printLoop(loop: Awaited<ReturnType<typeof walletLoop>>): void {
  console.log(`relay on the fork (verify + simulate + broadcast + receipt, sequential, ${loop.relay_broadcast.count} relays): ${loop.relay_broadcast.per_second_sequential} relays/s (goal >= 200), p50 ${loop.relay_broadcast.p50_ms} ms, p99 ${loop.relay_broadcast.p99_ms} ms`);
  const mw = loop.relay_broadcast_many_wallets;
  console.log(`relay on the fork, ${mw.wallets} wallets at once (${mw.workers} at a time, each wallet's 3 steps in order): ${mw.per_second} relays/s answered 200 (goal >= 200), p50 ${mw.p50_ms} ms, p99 ${mw.p99_ms} ms, failures ${mw.failures}`);
  console.log(`signer agent full loop (x402 payment, envelope, policy, preflight, sign, relay, read back; deposit of 100 USDC, ${loop.agent_loop.runs} runs): p50 ${loop.agent_loop.p50_ms} ms (goal <= 100), p90 ${loop.agent_loop.p90_ms} ms, max ${loop.agent_loop.max_ms} ms`);
}

const fmt = (n: number, w: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "n/a").padStart(w);

async function paidPart(result: Record<string, unknown>): Promise<void> {
  const paidRows = await paid();
  result.paid = paidRows;
  console.log(`\npaid GET /api/v1/health (verify, handler, settle on a local Base Sepolia; each request its own EIP-3009 proof; same facilitator process):`);
  console.log(["server".padEnd(22), "x402".padEnd(12), "clients".padStart(7), "req/s".padStart(8), "p50 ms".padStart(8), "p99 ms".padStart(8), "fail".padStart(5), "p50 vs stock".padStart(13), "rps vs stock".padStart(13), "  CPU ms per request (server, facilitator, anvil, load generator); machine busy"].join(" "));
  for (const r of paidRows) {
    const stock = paidRows.find((s) => s.server.startsWith("x402-express") && s.connections === r.connections)!;
    const cpu = r.cpu_ms_per_request ? `  ${Object.values(r.cpu_ms_per_request).map((v) => v.toFixed(1)).join(" / ")}; ${r.machine_busy_pct}%` : "";
    console.log([r.server.padEnd(22), r.version.padEnd(12), fmt(r.connections, 7), fmt(r.rps, 8, 1), fmt(r.p50_us / 1000, 8, 1), fmt(r.p99_us / 1000, 8, 1), fmt(r.failures, 5), fmt(r.p50_us / stock.p50_us, 13, 2), fmt(r.rps / stock.rps, 13, 2)].join(" ") + cpu);
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const result: Record<string, unknown> = {
    started_at: started.toISOString(),
    mode: [QUICK ? "quick" : "full", PROFILE ? "profile" : ROUTES_ONLY ? "routes-only" : LOOP_ONLY ? "wallet-loop" : PAID_ONLY ? "paid" : ""].filter(Boolean).join(" "),
    node: process.version,
    cores: os.cpus().length,
    seconds_per_route: SECONDS,
    connections: CONNECTIONS,
    how: "each server in its own process (gateway and facilitator from the stack bundles, log level info, logs to a file); load from the bench process; latency in microseconds",
  };
  if (TABLES_ONLY) {
    await tables(result);
    return write(result, started);
  }
  if (PAID_ONLY) {
    await paidPart(result);
    return write(result, started);
  }
  if (LOOP_ONLY) {
    const loop = await walletLoop();
    result.wallet_loop = loop;
    printLoop(loop);
    return write(result, started);
  }
  const http = await routes();
  result.routes = http.rows;
  result.gateway_rss_kb = http.rss_kb;
  console.log(`\n${SECONDS}s per route after ${WARMUP}s warm-up, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} cores; ratios against the bare Express baseline (p50/p99 ratio: latency, lower is better)\n`);
  console.log(["route".padEnd(62), "req/s".padStart(8), "p50 us".padStart(8), "p99 us".padStart(8), "fail".padStart(5), "rps x".padStart(7), "p50 x".padStart(7), "p99 x".padStart(7), "goal".padStart(12)].join(" "));
  for (const r of http.rows) {
    console.log([r.name.padEnd(62), fmt(r.rps, 8), fmt(r.p50_us, 8), fmt(r.p99_us, 8), fmt(r.failures, 5), fmt(r.rps_ratio, 7, 2), fmt(r.p50_ratio, 7, 2), fmt(r.p99_ratio, 7, 2), (r.goal ?? "").padStart(12)].join(" "));
    if (r.profile) for (const s of r.profile.spots.slice(0, 6)) console.log(`      ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    if (r.profile) console.log(`      by module: ${r.profile.modules.slice(0, 8).map((m) => `${m.module} ${m.self_pct}%`).join(", ")}`);
  }
  if (http.rss_kb) console.log(`gateway RSS: ${Math.round(http.rss_kb.start / 1024)} MB before the routes, ${Math.round(http.rss_kb.end / 1024)} MB after`);

  if (PROFILE) {
    const relay = await relayNoBroadcast();
    result.relay_no_broadcast = relay;
    console.log(`${relay.name}: ${relay.rps.toFixed(0)} relays/s`);
    for (const s of relay.profile?.spots.slice(0, 8) ?? []) console.log(`      ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    if (relay.profile) console.log(`      by module: ${relay.profile.modules.slice(0, 8).map((m) => `${m.module} ${m.self_pct}%`).join(", ")}`);
  }
  if (ROUTES_ONLY) return write(result, started); // the profiles are of the HTTP routes (and the relay)

  await paidPart(result);

  const relay = await relayNoBroadcast();
  result.relay_no_broadcast = relay;
  console.log(`\n${relay.name}: ${relay.rps.toFixed(0)} relays/s (goal >= 2000), p50 ${(relay.p50_us / 1000).toFixed(2)} ms, p99 ${(relay.p99_us / 1000).toFixed(2)} ms, ${relay.requests} relays at ${relay.connections} connections, failures ${relay.failures}`);

  if (!QUICK) {
    const loop = await walletLoop();
    result.wallet_loop = loop;
    printLoop(loop);

    await tables(result);

    const memory = await soak(Number(process.env.BENCH_SOAK_SECONDS ?? 60));
    result.memory = memory;
    const mid = memory.samples.find((x) => x.at_s >= 20) ?? memory.samples[0]!;
    console.log(`\nmemory: one gateway under a ${memory.seconds} s mixed load (${memory.requests} requests, ${memory.failures} failures): RSS ${memory.samples.map((x) => `${x.at_s}s ${x.rss_mb} MB`).join(", ")}; from 20 s to the end ${mid.rss_mb} -> ${memory.samples.at(-1)!.rss_mb} MB`);

    const { benchInstances } = await import("./instances");
    const layouts = await benchInstances([1, 3]);
    result.instances = layouts;
    console.log(`\ninstances on one embedded PostgreSQL (each in its own process; paid and bearer load round-robin):`);
    for (const l of layouts) console.log(`  ${l.instances} instance(s): paid ${l.paid.rps.toFixed(1)} req/s (p50 ${l.paid.p50.toFixed(0)} ms, ${l.paid.failures} failures), bearer ${l.bearer.rps.toFixed(0)} req/s (p99 ${l.bearer.p99.toFixed(1)} ms)`);
  }

  write(result, started);
}

function write(result: Record<string, unknown>, started: Date): void {
  fs.mkdirSync(RESULTS, { recursive: true });
  const text = `${JSON.stringify(result, null, 2)}\n`;
  const latest = QUICK ? "quick-latest" : PROFILE ? "profile-latest" : ROUTES_ONLY ? "routes-latest" : TABLES_ONLY ? "tables-latest" : LOOP_ONLY ? "wallet-loop-latest" : PAID_ONLY ? "paid-latest" : "latest";
  if (!QUICK) fs.writeFileSync(path.join(RESULTS, `${started.toISOString().replace(/[:.]/g, "-")}.json`), text);
  fs.writeFileSync(path.join(RESULTS, `${latest}.json`), text);
  console.log(`\nresults: bench/results/${latest}.json (${((Date.now() - started.getTime()) / 1000).toFixed(0)} s)`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });
