/**
 * x402 sessions (`batch-settlement`) on the paid GET /api/v1/health, each server in its own process on a fresh
 * local Base Sepolia: the gateway (sessions offered beside `exact`) and the facilitator with sessions' keys.
 *
 * - On-chain transactions per 1,000 session calls (not --quick): `clients` payers, each with its own channel
 *   (the official client: @x402/core's x402Client with @x402/evm's batch-settlement scheme), make 1,000 calls
 *   in all, then a last batch is redeemed (session-transactions.ts).
 * - With --profile (and --paid): the gateway under node --cpu-prof, the bearer and session rows only, one turn, no
 *   transaction count; each row's window of the profile in results/profiles/session_<row>.json.
 * - The same route paid in a session, with a bearer key (the baseline: no payment at all) and with `exact`
 *   (x402 v2), at `clients` clients, the three rows taking turns in rotated orders (args.ts PAID_TURNS), CPU per
 *   request of each process. A session client's vouchers are signed by the official client before the load,
 *   as `exact`'s proofs are; each client pays its own channel in its own closed loop (a voucher's cumulative
 *   amount is one price above the last one charged).
 */
import fs from "node:fs";
import path from "node:path";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { freePort } from "../fixtures/anvil";
import { PAID_TURNS, PROFILE, QUICK, RESULTS } from "./args";
import { figuresOf, load, type LoadFigures, type Target } from "./http-load";
import { hotSpots } from "./profile";
import { cpuPerRequest, SESSION_FACILITATOR_ENV, SESSION_GATEWAY_ENV, startFacilitatorProcess, startGatewayProcess } from "./processes";
import { sessionPayers, type SessionPayer, type VoucherBatch } from "./session-payers";
import { transactionsPerCalls } from "./session-transactions";
import { dir, json, keep } from "./session";

export const SESSION_CLIENTS = Number(process.env.BENCH_SESSION_CLIENTS ?? 16);
/** calls of the transaction count */
const TX_CALLS = 1_000;
/** requests of the session and bearer rows (all turns): they take a few milliseconds each, `exact`'s a chain's settlement */
const FAST_REQUESTS = QUICK ? 240 : Number(process.env.BENCH_SESSION_REQUESTS ?? 3_000);
const EXACT_REQUESTS = QUICK ? 48 : Math.max(Number(process.env.BENCH_PAID_REQUESTS ?? 200), SESSION_CLIENTS * 6);

export type SessionRow = LoadFigures & { row: string; cpu_ms_per_request: Record<string, number>; machine_busy_pct: number; turns: number };

export async function sessions() {
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { x402Client } = await import("@x402/core/client");
  const { registerExactEvmScheme } = await import("@x402/evm/exact/client");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");

  const chain = await startBaseSepolia();
  try {
    const facilitator = keep(await startFacilitatorProcess(dir, chain.rpcUrl, await freePort(), [], SESSION_FACILITATOR_ENV));
    const payTo = devAccount(2).address;
    const profDir = PROFILE ? fs.mkdtempSync(path.join(dir, "prof-")) : undefined;
    const gw = keep(
      await startGatewayProcess(
        dir,
        { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: payTo, ...SESSION_GATEWAY_ENV },
        profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [],
      ),
    );
    const url = `${gw.url}/api/v1/health`;
    const required = decodePaymentRequiredHeader((await fetch(url)).headers.get("payment-required")!);
    const offer = required.accepts.find((a) => a.scheme === "batch-settlement");
    if (!offer) throw new Error("the gateway offers no x402 session on GET /api/v1/health");
    const price = BigInt(offer.amount);

    const c = SESSION_CLIENTS;
    // each channel's deposit: twice its share of every session call of the run (the closed loops' shares differ)
    const depositCalls = Math.ceil((2 * (TX_CALLS + FAST_REQUESTS)) / c) + 16;
    const payers = await sessionPayers(chain, required, c, BigInt(depositCalls) * price);
    // not --quick: 1,000 calls and a last batch take about 10 s
    const transactions =
      QUICK || PROFILE
        ? undefined
        : await transactionsPerCalls({ chain, payTo, payers, required, url, calls: TX_CALLS, vouchers: signVouchers, target: vouchersOf });
    if (QUICK || PROFILE) for (const p of payers) await p.deposit(url);

    // ---- the same route: session, bearer key, exact (v2), taking turns
    const treasury = await json(`${gw.url}/api/v1/treasuries`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ wallet_address: privateKeyToAccount(generatePrivateKey()).address }),
    });
    const bearer = { authorization: `Bearer ${treasury.api_key as string}` };
    const exactPayer = privateKeyToAccount(generatePrivateKey());
    await chain.fund(exactPayer.address, 1_000_000_000n);
    const exact = new x402Client();
    registerExactEvmScheme(exact, { signer: exactPayer });
    const proof = async () => ({ "payment-signature": Buffer.from(JSON.stringify(await exact.createPaymentPayload(required))).toString("base64") });
    // the exact payer's first paid call creates its treasury: once, before the load
    await fetch(url, { headers: await proof() }).then((r) => r.arrayBuffer());

    /** each row's requests of one turn, their proofs signed before its load (not in its time or CPU) */
    type Row = { row: string; count: number; target: (count: number) => Promise<Target> };
    const rows: Row[] = [
      { row: "bearer key", count: FAST_REQUESTS, target: async () => ({ url, headers: bearer }) },
      { row: "session (voucher)", count: FAST_REQUESTS, target: async (n) => vouchersOf(payers, await signVouchers(payers, required, n, c), url) },
      {
        row: "exact (v2)",
        count: EXACT_REQUESTS,
        target: async (n) => {
          const proofs = await Promise.all(Array.from({ length: n }, proof));
          return { url, headersOf: (i) => proofs[i]! };
        },
      },
    ];
    if (PROFILE) rows.splice(2);
    /** each row's windows of the gateway's profile (ms since it was spawned) */
    const windows: [number, number][][] = rows.map(() => []);
    const pids = { gateway: gw.proc.pid, facilitator: facilitator.proc.pid, anvil: (chain as unknown as { process?: { pid?: number } }).process?.pid };
    const pooled = rows.map(() => ({ latencies: [] as number[], seconds: 0, failures: 0, requests: 0, busy: 0, cpu: {} as Record<string, number> }));
    for (let turn = 0; turn < (PROFILE ? 1 : PAID_TURNS); turn++) {
      for (let k = 0; k < rows.length; k++) {
        const at = (k + turn) % rows.length;
        const p = pooled[at]!;
        const n = Math.ceil(rows[at]!.count / PAID_TURNS);
        const target = await rows[at]!.target(n);
        const from = performance.now() - gw.spawnedAt;
        const r = await cpuPerRequest(pids, () => load(`${rows[at]!.row} c=${c}`, target, { connections: c, count: n, keep: p.latencies }));
        windows[at]!.push([from, performance.now() - gw.spawnedAt]);
        p.seconds += r.seconds;
        p.failures += r.failures;
        p.requests += r.requests;
        p.busy += r.machine_busy_pct * r.seconds;
        for (const [name, ms] of Object.entries(r.cpu_ms_per_request)) p.cpu[name] = (p.cpu[name] ?? 0) + ms * r.requests;
      }
    }
    const figures: SessionRow[] = rows.map((row, k) => {
      const p = pooled[k]!;
      return {
        row: row.row,
        ...figuresOf(`${row.row} c=${c}`, c, p.latencies, p.seconds, p.failures),
        cpu_ms_per_request: Object.fromEntries(Object.entries(p.cpu).map(([name, total]) => [name, Number((total / Math.max(1, p.requests)).toFixed(2))])),
        machine_busy_pct: Number((p.busy / p.seconds).toFixed(0)),
        turns: PAID_TURNS,
      };
    });
    const [bearerRow, sessionRow, exactRow] = figures as [SessionRow, SessionRow, SessionRow | undefined];
    const ratio = (a: number, b: number) => Number((a / b).toFixed(2));
    for (const s of [gw, facilitator]) await s.stop();
    if (profDir) profileRows(profDir, rows, windows, figures);
    return {
      route: "GET /api/v1/health",
      price_micro: price.toString(),
      clients: c,
      rows: figures,
      session_vs_bearer: { rps_ratio: ratio(sessionRow.rps, bearerRow.rps), p50_ratio: ratio(sessionRow.p50_us, bearerRow.p50_us) },
      exact_vs_bearer: exactRow && { rps_ratio: ratio(exactRow.rps, bearerRow.rps), p50_ratio: ratio(exactRow.p50_us, bearerRow.p50_us) },
      transactions,
    };
  } finally {
    await chain.stop();
  }
}

/** each row's window of the gateway's profile: its top functions and modules, saved and printed */
function profileRows(profDir: string, rows: { row: string }[], windows: [number, number][][], figures: (SessionRow & { profile?: unknown })[]): void {
  const file = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) return;
  fs.mkdirSync(path.join(RESULTS, "profiles"), { recursive: true });
  rows.forEach((row, k) => {
    const [from, until] = windows[k]![0]!;
    const profile = hotSpots(path.join(profDir, file), from + 200, 20, until);
    figures[k]!.profile = profile;
    fs.writeFileSync(
      path.join(RESULTS, "profiles", `session_${row.row.replace(/[^A-Za-z0-9]+/g, "_").replace(/_$/, "")}.json`),
      JSON.stringify(profile, null, 2),
    );
    console.log(`\nprofile of ${row.row} (busy ${profile.busy_pct}%):`);
    for (const s of profile.spots) console.log(`  ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    for (const m of profile.modules.slice(0, 15)) console.log(`  ${String(m.self_pct).padStart(5)}%  [module] ${m.module}`);
  });
}

/** vouchers for `count` calls, each client's share and some more (the closed loops do not take exactly equal shares) */
function signVouchers(payers: SessionPayer[], required: Parameters<SessionPayer["sign"]>[0], count: number, connections: number): Promise<VoucherBatch[]> {
  const each = Math.ceil((count / connections) * 1.4) + 4;
  return Promise.all(payers.map((p) => p.sign(required, each)));
}

/** the load's target: each client sends its own channel's vouchers in order, in its own closed loop */
const vouchersOf = (payers: SessionPayer[], batches: VoucherBatch[], url: string): Target => ({
  url,
  headersOf: (_i, client) => payers[client]!.next(batches[client]!),
});
