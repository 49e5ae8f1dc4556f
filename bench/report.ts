/**
 * What a bench run prints, part by part, and the JSON it writes: bench/results/<time>.json for a full run,
 * and <mode>-latest.json (latest.json for a full run).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CONNECTIONS, LOOP_ONLY, PAID_ONLY, PROFILE, QUICK, RESULTS, ROUTES_ONLY, SECONDS, TABLES_ONLY, WARMUP, EVENTS_ONLY } from "./args";
import type { InstanceFigures } from "./instances";
import type { paid } from "./paid";
import type { relayNoBroadcast } from "./relay";
import type { agentLoopBySchemes } from "./agent-schemes";
import type { routes } from "./routes";
import type { sessions } from "./sessions";
import type { soak } from "./soak";
import type { TableFigures, TABLE_ROWS } from "./tables";
import type { walletLoop } from "./wallet-loop";

const fmt = (n: number, w: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "n/a").padStart(w);

export function printRoutes(http: Awaited<ReturnType<typeof routes>>): void {
  console.log(
    `\n${SECONDS}s per route after ${WARMUP}s warm-up, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} cores; ratios against the bare Express baseline (p50/p99 ratio: latency, lower is better)\n`,
  );
  console.log(
    [
      "route".padEnd(62),
      "req/s".padStart(8),
      "p50 us".padStart(8),
      "p99 us".padStart(8),
      "fail".padStart(5),
      "rps x".padStart(7),
      "p50 x".padStart(7),
      "p99 x".padStart(7),
      "goal".padStart(12),
    ].join(" "),
  );
  for (const r of http.rows) {
    console.log(
      [
        r.name.padEnd(62),
        fmt(r.rps, 8),
        fmt(r.p50_us, 8),
        fmt(r.p99_us, 8),
        fmt(r.failures, 5),
        fmt(r.rps_ratio, 7, 2),
        fmt(r.p50_ratio, 7, 2),
        fmt(r.p99_ratio, 7, 2),
        (r.goal ?? "").padStart(12),
      ].join(" "),
    );
    if (r.profile) for (const s of r.profile.spots.slice(0, 6)) console.log(`      ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    if (r.profile)
      console.log(
        `      by module: ${r.profile.modules
          .slice(0, 8)
          .map((m) => `${m.module} ${m.self_pct}%`)
          .join(", ")}`,
      );
  }
  if (http.rss_kb) console.log(`gateway RSS: ${Math.round(http.rss_kb.start / 1024)} MB before the routes, ${Math.round(http.rss_kb.end / 1024)} MB after`);
}

/** the relay without a chain: with --profile its hot spots, else against its goal */
export function printRelay(relay: Awaited<ReturnType<typeof relayNoBroadcast>>): void {
  if (PROFILE) {
    console.log(`${relay.name}: ${relay.rps.toFixed(0)} relays/s`);
    for (const s of relay.profile?.spots.slice(0, 8) ?? []) console.log(`      ${String(s.self_pct).padStart(5)}%  ${s.fn}  ${s.where}`);
    if (relay.profile)
      console.log(
        `      by module: ${relay.profile.modules
          .slice(0, 8)
          .map((m) => `${m.module} ${m.self_pct}%`)
          .join(", ")}`,
      );
    return;
  }
  console.log(
    `\n${relay.name}: ${relay.rps.toFixed(0)} relays/s (goal >= 2000), p50 ${(relay.p50_us / 1000).toFixed(2)} ms, p99 ${(relay.p99_us / 1000).toFixed(2)} ms, ${relay.requests} relays at ${relay.connections} connections, failures ${relay.failures}`,
  );
}

export function printPaid(paidRows: Awaited<ReturnType<typeof paid>>): void {
  console.log(`\npaid GET /api/v1/health (verify, handler, settle on a local Base Sepolia; each request its own EIP-3009 proof; same facilitator process):`);
  console.log(
    [
      "server".padEnd(22),
      "x402".padEnd(12),
      "clients".padStart(7),
      "req/s".padStart(8),
      "p50 ms".padStart(8),
      "p99 ms".padStart(8),
      "fail".padStart(5),
      "p50 vs stock".padStart(13),
      "rps vs stock".padStart(13),
      "  CPU ms per request (server, facilitator, anvil, load generator); machine busy",
    ].join(" "),
  );
  for (const r of paidRows) {
    const stock = paidRows.find((s) => s.server.startsWith("x402-express") && s.connections === r.connections)!;
    const cpu = r.cpu_ms_per_request
      ? `  ${Object.values(r.cpu_ms_per_request)
          .map((v) => v.toFixed(1))
          .join(" / ")}; ${r.machine_busy_pct}%`
      : "";
    console.log(
      [
        r.server.padEnd(22),
        r.version.padEnd(12),
        fmt(r.connections, 7),
        fmt(r.rps, 8, 1),
        fmt(r.p50_us / 1000, 8, 1),
        fmt(r.p99_us / 1000, 8, 1),
        fmt(r.failures, 5),
        fmt(r.p50_us / stock.p50_us, 13, 2),
        fmt(r.rps / stock.rps, 13, 2),
      ].join(" ") + cpu,
    );
  }
}

/** x402 sessions: the paid route in a session against a bearer key (and exact), and the transactions per 1,000 calls */
export function printSessions(s: Awaited<ReturnType<typeof sessions>>): void {
  console.log(
    `\nx402 sessions on ${s.route} (price ${s.price_micro} micro-USDC), ${s.clients} clients, each session client its own channel; the three rows take ${s.rows[0]?.turns} turns:`,
  );
  console.log(
    [
      "row".padEnd(20),
      "req/s".padStart(8),
      "p50 ms".padStart(8),
      "p99 ms".padStart(8),
      "fail".padStart(5),
      "rps vs bearer".padStart(14),
      "p50 vs bearer".padStart(14),
      "  CPU ms per request (gateway, facilitator, anvil, load generator); machine busy",
    ].join(" "),
  );
  const bearer = s.rows[0]!;
  for (const r of s.rows)
    console.log(
      [
        r.row.padEnd(20),
        fmt(r.rps, 8, 1),
        fmt(r.p50_us / 1000, 8, 2),
        fmt(r.p99_us / 1000, 8, 2),
        fmt(r.failures, 5),
        fmt(r.rps / bearer.rps, 14, 2),
        fmt(r.p50_us / bearer.p50_us, 14, 2),
      ].join(" ") +
        `  ${Object.values(r.cpu_ms_per_request)
          .map((v) => v.toFixed(2))
          .join(" / ")}; ${r.machine_busy_pct}%`,
    );
  console.log(
    `session / bearer: throughput ${s.session_vs_bearer.rps_ratio}x, p50 ${s.session_vs_bearer.p50_ratio}x` +
      (s.exact_vs_bearer ? ` (exact / bearer: ${s.exact_vs_bearer.rps_ratio}x, ${s.exact_vs_bearer.p50_ratio}x)` : ""),
  );
  const t = s.transactions;
  if (!t) return; // --quick: not counted
  console.log(
    `on-chain transactions per ${t.calls.toLocaleString("en")} session calls (${t.clients} channels, ${t.calls_seconds} s, then the last batch): ${t.measured} (${t.deposits} deposits, ${t.claims} claims, ${t.settles} settles, ${t.other} other); the batch policy (${t.policy.redeem_vouchers} vouchers or ${t.policy.redeem_seconds} s) says at most ${t.policy.expected}; exact: ${t.exact.toLocaleString("en")}; redeemed ${t.redeemed_micro} of ${t.charged_micro} micro-USDC charged, ${t.failures} failed calls`,
  );
}

/** the signer agent's full loop paid with exact and with a session, in the same run */
export function printAgentSchemes(a: Awaited<ReturnType<typeof agentLoopBySchemes>>): void {
  const line = (name: string, f: typeof a.exact, what: string) =>
    `  ${name.padEnd(8)} p50 ${f.p50_ms} ms (the paid request ${f.request_p50_ms} ms), p90 ${f.p90_ms} ms, max ${f.max_ms} ms, first run ${f.first_ms} ms; ${f.payment_transactions} ${what}`;
  console.log(`
signer agent full loop by x402 scheme (deposit of 100 USDC, ${a.exact.runs} runs each, taking turns):`);
  console.log(line("exact", a.exact, "settlement transactions"));
  console.log(line("session", a.session, "deposit transaction(s)"));
  console.log(`  session / exact p50: ${a.session_vs_exact_p50}x`);
}

export function printLoop(loop: Awaited<ReturnType<typeof walletLoop>>): void {
  console.log(
    `relay on the fork (verify + simulate + broadcast + receipt, sequential, ${loop.relay_broadcast.count} relays): ${loop.relay_broadcast.per_second_sequential} relays/s (goal >= 200), p50 ${loop.relay_broadcast.p50_ms} ms, p99 ${loop.relay_broadcast.p99_ms} ms`,
  );
  const mw = loop.relay_broadcast_many_wallets;
  console.log(
    `relay on the fork, ${mw.wallets} wallets at once (${mw.workers} at a time, each wallet's 3 steps in order): ${mw.per_second} relays/s answered 200 (goal >= 200), p50 ${mw.p50_ms} ms, p99 ${mw.p99_ms} ms, failures ${mw.failures}`,
  );
  console.log(
    `signer agent full loop (x402 payment, envelope, policy, preflight, sign, relay, read back; deposit of 100 USDC, ${loop.agent_loop.runs} runs): p50 ${loop.agent_loop.p50_ms} ms (goal <= 100), p90 ${loop.agent_loop.p90_ms} ms, max ${loop.agent_loop.max_ms} ms`,
  );
}

export function printTables(figures: TableFigures[], rows: typeof TABLE_ROWS): void {
  console.log(`
cost as the work grows: ${rows.treasuries.toLocaleString("en")} treasuries, ${rows.fee_audit.toLocaleString("en")} fee-audit rows, ${rows.idempotency_keys.toLocaleString("en")} idempotency records (p50 full / p50 empty: 1.00 = no growth):`);
  for (const f of figures) {
    console.log(`  ${f.store} (seeded in ${f.seed_seconds} s)`);
    for (const r of f.routes)
      console.log(
        `    ${r.name.padEnd(40)} empty p50 ${fmt(r.empty.p50_us, 7)} us, ${fmt(r.empty.rps, 6)} req/s; full p50 ${fmt(r.full.p50_us, 7)} us, ${fmt(r.full.rps, 6)} req/s; growth ${r.p50_growth.toFixed(2)}`,
      );
  }
}

export function printMemory(memory: Awaited<ReturnType<typeof soak>>): void {
  const mid = memory.samples.find((x) => x.at_s >= 20) ?? memory.samples[0]!;
  console.log(
    `\nmemory: one gateway under a ${memory.seconds} s mixed load (${memory.requests} requests, ${memory.failures} failures): RSS ${memory.samples.map((x) => `${x.at_s}s ${x.rss_mb} MB`).join(", ")}; from 20 s to the end ${mid.rss_mb} -> ${memory.samples.at(-1)!.rss_mb} MB`,
  );
}

export function printInstances(layouts: InstanceFigures[]): void {
  console.log(`\ninstances on one embedded PostgreSQL (each in its own process; paid and bearer load round-robin):`);
  for (const l of layouts)
    console.log(
      `  ${l.instances} instance(s): paid ${l.paid.rps.toFixed(1)} req/s (p50 ${l.paid.p50.toFixed(0)} ms, ${l.paid.failures} failures), bearer ${l.bearer.rps.toFixed(0)} req/s (p99 ${l.bearer.p99.toFixed(1)} ms)`,
    );
}

export function write(result: Record<string, unknown>, started: Date): void {
  fs.mkdirSync(RESULTS, { recursive: true });
  const text = `${JSON.stringify(result, null, 2)}\n`;
  const latest = QUICK
    ? "quick-latest"
    : PROFILE
      ? PAID_ONLY
        ? "paid-profile-latest"
        : "profile-latest"
      : ROUTES_ONLY
        ? "routes-latest"
        : TABLES_ONLY
          ? "tables-latest"
          : LOOP_ONLY
            ? "wallet-loop-latest"
            : PAID_ONLY
              ? "paid-latest"
              : EVENTS_ONLY
                ? "events-latest"
                : "latest";
  if (!QUICK) fs.writeFileSync(path.join(RESULTS, `${started.toISOString().replace(/[:.]/g, "-")}.json`), text);
  fs.writeFileSync(path.join(RESULTS, `${latest}.json`), text);
  console.log(`\nresults: bench/results/${latest}.json (${((Date.now() - started.getTime()) / 1000).toFixed(0)} s)`);
}
