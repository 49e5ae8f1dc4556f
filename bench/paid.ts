/**
 * The paid path: the gateway (x402 v1, v2, v2 over MCP) and x402-express's own middleware, same facilitator,
 * same route and price, on a local Base Sepolia; each number of clients on a fresh chain, the rows of one
 * number (at the first, the paid MCP tool call too) taking turns (args.ts PAID_TURNS), CPU per request of every process involved. With --profile: 4 clients
 * only, the gateway under node --cpu-prof, its v2 and MCP rows' windows in results/profiles/paid_<row>.json.
 */
import fs from "node:fs";
import path from "node:path";
import { freePort } from "../fixtures/anvil";
import { PAID_CONCURRENCY, PAID_TURNS, PROFILE, QUICK, RESULTS } from "./args";
import { hotSpots } from "./profile";
import { figuresOf, load, type LoadFigures, type Target } from "./http-load";
import { benchServer, cpuPerRequest, startFacilitatorProcess, startGatewayProcess, startProcess, urlOf, type ServerProcess } from "./processes";
import { dir, json, keep } from "./session";

export /** the paid path: the gateway (v1, v2, MCP) and x402-express's own middleware, same facilitator, same route and price */
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
    const profDir = PROFILE ? fs.mkdtempSync(path.join(dir, "prof-")) : undefined;
    const gw = keep(
      await startGatewayProcess(dir, { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: payTo }, profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []),
    );
    /** the gateway's profile windows of its v2 and MCP rows (ms since it was spawned) */
    const windows: Record<string, [number, number]> = {};
    const since = () => performance.now() - gw.spawnedAt;
    const price = ((await json(`${gw.url}/x402/prices.json`)).prices as { method: string; path: string; amount_atomic: string }[]).find(
      (p) => p.path === "/api/v1/health",
    )!.amount_atomic;
    const stock = keep(
      await startProcess(
        benchServer("stock-x402.ts"),
        { STOCK_FACILITATOR_URL: facilitator.url, STOCK_PAY_TO: payTo, STOCK_PRICE_ATOMIC: price },
        /"url"/,
        path.join(dir, "stock.log"),
      ),
    );
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
    await fetch(`${gw.url}/api/v1/health`, { headers: { "x-payment": await createPaymentHeader(wallet as never, 1, gwChallenge.v1) } }).then((r) =>
      r.arrayBuffer(),
    );

    const rows: (LoadFigures & { server: string; version: string; cpu_ms_per_request?: Record<string, number>; machine_busy_pct?: number; turns?: number })[] =
      [];
    /** the processes of a row, read when it is measured (the chain and the facilitator are new at each number of clients) */
    const pids = (server: ServerProcess) => () => ({
      server: server.proc.pid,
      facilitator: facilitator.proc.pid,
      anvil: (chain as unknown as { process?: { pid?: number } }).process?.pid,
    });
    /** a row: its server, its first URL, and its load of n requests, each with its own proof (`mcp`: at the first number of clients only) */
    type Paid = {
      server: string;
      version: string;
      url: string;
      pids: ReturnType<typeof pids>;
      proofs: (n: number) => Promise<Record<string, string>[]>;
      target?: (n: number) => Promise<Target>;
      mcp?: boolean;
    };
    const v1For = (challenge: typeof gwChallenge.v1) => async (n: number) =>
      (await Promise.all(Array.from({ length: n }, () => createPaymentHeader(wallet as never, 1, challenge)))).map((p) => ({ "x-payment": p }));
    const paidServers: Paid[] = [
      { server: "x402-express (stock)", version: "v1", url: `${stockUrl}/api/v1/health`, pids: pids(stock), proofs: v1For(stockChallenge.v1) },
      { server: "gateway", version: "v1", url: `${gw.url}/api/v1/health`, pids: pids(gw), proofs: v1For(gwChallenge.v1) },
      {
        server: "gateway",
        version: "v2",
        url: `${gw.url}/api/v1/health`,
        pids: pids(gw),
        proofs: async (n) =>
          Promise.all(
            Array.from({ length: n }, async () => ({
              "payment-signature": Buffer.from(JSON.stringify(await v2.createPaymentPayload(requiredV2))).toString("base64"),
            })),
          ),
      },
      {
        // the same payment as a paid MCP tool call (its REST twin is the v2 row's route), taking its turns with the others
        server: "gateway",
        version: "v2 over MCP",
        url: `${gw.url}/api/mcp`,
        pids: pids(gw),
        proofs: async () => [],
        mcp: true,
        target: async (n) => {
          const payments = await Promise.all(Array.from({ length: n }, () => v2.createPaymentPayload(requiredV2)));
          return {
            url: `${gw.url}/api/mcp`,
            headers: { accept: "application/json, text/event-stream" },
            body: (i) =>
              JSON.stringify({
                jsonrpc: "2.0",
                id: 1,
                method: "tools/call",
                params: { name: "get_health", arguments: {}, _meta: { "x402/payment": payments[i] } },
              }),
            ok: (status, b) => status === 200 && b.includes("x402/payment-response") && !b.includes('"isError":true'),
          };
        },
      },
    ];
    for (const [level, c] of (PROFILE ? PAID_CONCURRENCY.slice(0, 1) : PAID_CONCURRENCY).entries()) {
      const servers = paidServers.filter((s) => level === 0 || !s.mcp);
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
        for (const s of servers.slice(0, 2)) await fetch(s.url, { headers: (await s.proofs(1))[0] }).then((r) => r.arrayBuffer());
      }
      const count = QUICK ? 40 : Math.max(Number(process.env.BENCH_PAID_REQUESTS ?? 200), c * 6);
      // each turn's slice keeps every client busy for a few requests (a slice's start and end, with fewer
      // clients busy, are the same share of every row)
      const perTurn = Math.max(Math.ceil(count / PAID_TURNS), c * 3);
      const pooled = servers.map(() => ({ latencies: [] as number[], seconds: 0, failures: 0, requests: 0, busy: 0, cpu: {} as Record<string, number> }));
      for (let turn = 0; turn < PAID_TURNS; turn++) {
        for (let k = 0; k < servers.length; k++) {
          const at = (k + turn) % servers.length;
          const s = servers[at]!;
          const p = pooled[at]!;
          const proofs = await s.proofs(perTurn); // signed before the slice's load
          const target: Target = s.target ? await s.target(perTurn) : { url: s.url, headersOf: (i) => proofs[i]! };
          const from = since();
          const r = await cpuPerRequest(s.pids(), () => load(`${s.server} ${s.version} c=${c}`, target, { connections: c, count: perTurn, keep: p.latencies }));
          const row = s.mcp ? "mcp" : s.server === "gateway" && s.version === "v2" ? "v2" : undefined;
          if (row && !windows[row]) windows[row] = [from, since()];
          p.seconds += r.seconds;
          p.failures += r.failures;
          p.requests += r.requests;
          p.busy += r.machine_busy_pct * r.seconds;
          for (const [name, ms] of Object.entries(r.cpu_ms_per_request)) p.cpu[name] = (p.cpu[name] ?? 0) + ms * r.requests;
        }
      }
      for (const [k, s] of servers.entries()) {
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
    }
    for (const s of [stock, gw, facilitator]) await s.stop();
    if (profDir) profileWindows(profDir, windows);
    return rows;
  } finally {
    await chain.stop();
  }
}

/** the gateway's top functions and modules in each row's window, saved and printed */
function profileWindows(profDir: string, windows: Record<string, [number, number]>): void {
  const file = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) return;
  fs.mkdirSync(path.join(RESULTS, "profiles"), { recursive: true });
  for (const [row, [from, until]] of Object.entries(windows)) {
    const profile = hotSpots(path.join(profDir, file), from + 200, 20, until);
    fs.writeFileSync(path.join(RESULTS, "profiles", `paid_${row}.json`), JSON.stringify(profile, null, 2));
    console.log(`\nprofile of the gateway's ${row} row (busy ${profile.busy_pct}%):`);
    for (const s of profile.spots) console.log(`  ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    for (const m of profile.modules.slice(0, 15)) console.log(`  ${String(m.self_pct).padStart(5)}%  [module] ${m.module}`);
  }
}
