/**
 * npm run bench: every server in its own process, started as production
 * starts it (bench/processes.ts), loaded from this process (bench/http-load.ts,
 * latency in microseconds), with a bare Express hello-world and, for the paid
 * path, x402-express's own middleware measured in the same run; ratios are
 * against those. Prints a table and writes bench/results/<time>.json (and
 * latest.json; --quick writes quick-latest.json).
 *
 *   --quick     under a minute: 1 s per route, the paid path at one concurrency, sessions, no fork, no instances
 *   --paid      only the paid path: stock and gateway (v1, v2, MCP), x402 sessions against a bearer key and exact
 *               (and on-chain transactions per 1,000 session calls), the signer agent's loop by x402 scheme
 *   --routes-only  only the HTTP routes against the baseline
 *   --tables    only the routes on an empty and on a full store, SQLite and PostgreSQL (bench/tables.ts)
 *   --wallet-loop  only the wallet loop on the fork: relays with broadcast (one wallet, then many at once), the agent's loop
 *   --protection-scale  only the protection engine at scale: watch figures of 100 to 10,000 Safes through a
 *               counting JSON-RPC proxy (0 and 30 ms), and a market-wide fall with 1, 2, 3 engines and 3 with one
 *               killed (bench/protection/scale/; results/protection-scale-latest.json)
 *   --events    only the event path: a wallet-mode deposit and its relay with the event log off, on, and with a
 *               webhook per treasury (ratios against off, same run), and webhook delivery latency (bench/events.ts)
 *   --profile   only the HTTP routes, each on a fresh gateway under node --cpu-prof: the top self-time
 *               functions of the measured load in the JSON and bench/results/profiles/; with --paid, the paid
 *               path's v2 and MCP rows (4 clients) and the session and bearer rows of x402 sessions instead
 *   BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_PAID_REQUESTS tune it; BENCH_ONLY (a regular expression)
 *   keeps only the HTTP routes whose name matches.
 *
 * This file is the order of the parts; the flags are read in args.ts, each part is its own file (routes.ts,
 * paid.ts, relay.ts, wallet-loop.ts, tables.ts, soak.ts, instances.ts) and report.ts prints and writes.
 */
import os from "node:os";
import { CONNECTIONS, EVENTS_ONLY, LOOP_ONLY, PAID_ONLY, PROFILE, PROTECTION_SCALE, QUICK, ROUTES_ONLY, SECONDS, TABLES_ONLY, WARMUP } from "./args";
import { eventPath, printEventPath } from "./events";
import { paid } from "./paid";
import { relayNoBroadcast } from "./relay";
import { agentLoopBySchemes } from "./agent-schemes";
import { printAgentSchemes, printInstances, printLoop, printMemory, printPaid, printRelay, printRoutes, printSessions, printTables, write } from "./report";
import { routes } from "./routes";
import { closeSession, dir } from "./session";
import { sessions } from "./sessions";
import { soak } from "./soak";
import { walletLoop } from "./wallet-loop";

/** the routes on an empty store and on a full one (bench/tables.ts), SQLite and PostgreSQL */
async function tables(result: Record<string, unknown>): Promise<void> {
  const { benchTables, TABLE_ROWS } = await import("./tables");
  const figures = await benchTables(dir, { connections: CONNECTIONS, seconds: Math.min(SECONDS, 3), warmupSeconds: WARMUP });
  result.tables = figures;
  printTables(figures, TABLE_ROWS);
}

/** the paid path, then x402 sessions against a bearer key and exact, then (not --quick: it needs the fork) the agent's loop by scheme */
async function paidPart(result: Record<string, unknown>): Promise<void> {
  const paidRows = await paid();
  result.paid = paidRows;
  printPaid(paidRows);
  const session = await sessions();
  result.sessions = session;
  printSessions(session);
  if (QUICK || PROFILE) return;
  const loops = await agentLoopBySchemes();
  result.agent_loop_by_scheme = loops;
  printAgentSchemes(loops);
}

async function main(): Promise<void> {
  const started = new Date();
  const result: Record<string, unknown> = {
    started_at: started.toISOString(),
    mode: [
      QUICK ? "quick" : "full",
      PROFILE && PAID_ONLY
        ? "paid profile"
        : PROFILE
          ? "profile"
          : ROUTES_ONLY
            ? "routes-only"
            : LOOP_ONLY
              ? "wallet-loop"
              : PAID_ONLY
                ? "paid"
                : EVENTS_ONLY
                  ? "events"
                  : "",
    ]
      .filter(Boolean)
      .join(" "),
    node: process.version,
    cores: os.cpus().length,
    seconds_per_route: SECONDS,
    connections: CONNECTIONS,
    how: "each server in its own process (gateway and facilitator from the stack bundles, log level info, logs to a file); load from the bench process; latency in microseconds",
  };
  if (PROTECTION_SCALE) {
    // its own results file (results/protection-scale-latest.json)
    const { protectionScale } = await import("./protection/scale/bench");
    await protectionScale();
    return;
  }
  if (TABLES_ONLY) {
    await tables(result);
    return write(result, started);
  }
  if (EVENTS_ONLY) {
    result.event_path = await eventPath();
    printEventPath(result.event_path as Awaited<ReturnType<typeof eventPath>>);
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
  printRoutes(http);

  if (PROFILE) {
    const relay = await relayNoBroadcast();
    result.relay_no_broadcast = relay;
    printRelay(relay);
  }
  if (ROUTES_ONLY) return write(result, started); // the profiles are of the HTTP routes (and the relay)

  await paidPart(result);

  const relay = await relayNoBroadcast();
  result.relay_no_broadcast = relay;
  printRelay(relay);

  const events = await eventPath();
  result.event_path = events;
  printEventPath(events);

  if (!QUICK) {
    const loop = await walletLoop();
    result.wallet_loop = loop;
    printLoop(loop);

    await tables(result);

    const memory = await soak(Number(process.env.BENCH_SOAK_SECONDS ?? 60));
    result.memory = memory;
    printMemory(memory);

    const { benchInstances } = await import("./instances");
    const layouts = await benchInstances([1, 3]);
    result.instances = layouts;
    printInstances(layouts);
  }

  write(result, started);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    await closeSession();
    // the protection-scale part's clients (protocol-kit's among them) keep the loop alive
    if (PROTECTION_SCALE) process.exit();
  });
