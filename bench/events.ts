/**
 * What the event log costs the action routes, and how soon a webhook receiver hears of a change.
 *
 * Three gateway processes in the same run, each loaded the same way (wallet-mode treasuries on the simulated
 * ledger: a deposit answers its envelope and writes `envelope.created`, then the relay of its first step writes
 * `relay.confirmed`):
 *   - `off`:      EVENT_LOG=off, no event written (the baseline);
 *   - `on`:       the log as it runs: each event in the action's own transaction;
 *   - `webhook`:  the log, and one webhook endpoint per treasury (a delivery row per event, sent by the worker
 *                 to a receiver in this process while the load runs).
 * Each variant runs in alternating rounds (2 with --quick, else 3) and keeps its best (the machine's drift and a
 * busy moment hit each alike).
 * Ratios are against `off`. Latency: from an event's `created_at` to its arrival at the receiver (p50, p99).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { CONNECTIONS, QUICK } from "./args";
import { load, percentileOf, type LoadFigures } from "./http-load";
import { startGatewayProcess } from "./processes";
import { dir, json, keep } from "./session";

type Variant = "off" | "on" | "webhook";

export interface EventPathFigures {
  treasuries: number;
  rows: (LoadFigures & { variant: Variant; route: string; rps_ratio: number; p50_ratio: number; p99_ratio: number })[];
  /** under the load (events written at the route's full rate), and at rest (one event at a time, 50 ms apart) */
  delivery: { events: number; p50_ms: number; p99_ms: number; max_ms: number };
  delivery_at_rest: { events: number; p50_ms: number; p99_ms: number; max_ms: number };
}

/** a receiver on 127.0.0.1 that notes when each event arrived, against the time the event was written */
async function receiver() {
  const lags: number[] = [];
  const rest: number[] = [];
  let atRest = false;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const created = Date.parse((JSON.parse(body) as { created_at: string }).created_at);
      (atRest ? rest : lags).push(Date.now() - created);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    lags,
    rest,
    resting: (on: boolean) => (atRest = on),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** one round on a fresh gateway: n deposits (each its own treasury), then the relay of each envelope's first step */
async function round(variant: Variant, n: number, hook: Awaited<ReturnType<typeof receiver>>): Promise<{ deposit: LoadFigures; relay: LoadFigures }> {
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const gw = keep(await startGatewayProcess(dir, variant === "off" ? { EVENT_LOG: "off" } : { EVENTS_POLL_MS: "200" }));
  const accounts = Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()));
  const hooks: { key: string; id: string }[] = [];
  const keys = await Promise.all(
    accounts.map(async (account) => {
      const t = await json(`${gw.url}/api/v1/treasuries`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ wallet_address: account.address }),
      });
      if (variant === "webhook") {
        const w = await json(`${gw.url}/api/v1/webhooks`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${t.api_key}` },
          body: JSON.stringify({ url: hook.url }),
        });
        hooks.push({ key: t.api_key, id: w.id });
      }
      return t.api_key as string;
    }),
  );
  const envelopes: { tx_id: string; unsigned_transaction: { chain_id: number; to: `0x${string}`; data: `0x${string}`; value: string } }[] = [];
  const deposit = await load(
    `POST /api/v1/deposits (wallet mode, envelope.created) [${variant}]`,
    {
      url: `${gw.url}/api/v1/deposits`,
      body: () => JSON.stringify({ amount_usdc: 1000 }),
      headersOf: (i) => ({ authorization: `Bearer ${keys[i]}`, "idempotency-key": `bench-events-${variant}-${i}` }),
      ok: (s) => s === 202,
    },
    { connections: CONNECTIONS, count: n },
  );
  // the envelopes, read again by the same keys (a replay of each Idempotency-Key answers it)
  for (let i = 0; i < n; i++) {
    const env = await json(`${gw.url}/api/v1/deposits`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${keys[i]}`, "idempotency-key": `bench-events-${variant}-${i}` },
      body: JSON.stringify({ amount_usdc: 1000 }),
    });
    envelopes.push(env.steps[0]);
  }
  const signed = await Promise.all(
    envelopes.map(async (step, i) =>
      JSON.stringify({
        tx_id: step.tx_id,
        signed_transaction: await accounts[i]!.signTransaction({
          type: "eip1559",
          chainId: step.unsigned_transaction.chain_id,
          nonce: 0,
          to: step.unsigned_transaction.to,
          data: step.unsigned_transaction.data,
          value: BigInt(step.unsigned_transaction.value),
          gas: 300_000n,
          maxFeePerGas: 1_000_000_000n,
          maxPriorityFeePerGas: 1_000_000n,
        }),
      }),
    ),
  );
  const relay = await load(
    `POST /api/v1/relay (simulated, relay.confirmed) [${variant}]`,
    { url: `${gw.url}/api/v1/relay`, body: (i) => signed[i]!, headersOf: (i) => ({ "idempotency-key": `bench-events-relay-${variant}-${i}` }) },
    { connections: CONNECTIONS, count: n },
  );
  // the webhook variant: let the worker finish what the load left queued, then one event at a time, at rest
  if (variant === "webhook") {
    await new Promise((r) => setTimeout(r, 3_000));
    hook.resting(true);
    for (const h of hooks.slice(0, 40)) {
      await json(`${gw.url}/api/v1/webhooks/${h.id}/test`, { method: "POST", headers: { authorization: `Bearer ${h.key}` } });
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 500));
    hook.resting(false);
  }
  await gw.stop();
  return { deposit, relay };
}

/** rounds of each variant, alternating; each keeps its best */
const ROUNDS = QUICK ? 2 : 3;
const better = (a: LoadFigures, b: LoadFigures) => (a.rps >= b.rps ? a : b);
const ratio = (a: number, b: number) => Number((a / b).toFixed(3));

export async function eventPath(): Promise<EventPathFigures> {
  const n = QUICK ? 300 : 1_500;
  const hook = await receiver();
  const best = new Map<Variant, { deposit: LoadFigures; relay: LoadFigures }>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const variant of ["off", "on", "webhook"] as const) {
      const got = await round(variant, n, hook);
      const kept = best.get(variant);
      best.set(variant, kept ? { deposit: better(kept.deposit, got.deposit), relay: better(kept.relay, got.relay) } : got);
    }
  }
  await hook.close();
  const off = best.get("off")!;
  const rows: EventPathFigures["rows"] = [];
  for (const variant of ["off", "on", "webhook"] as const) {
    const v = best.get(variant)!;
    for (const route of ["deposit", "relay"] as const) {
      const f = v[route];
      const base = off[route];
      rows.push({ ...f, variant, route, rps_ratio: ratio(f.rps, base.rps), p50_ratio: ratio(f.p50_us, base.p50_us), p99_ratio: ratio(f.p99_us, base.p99_us) });
    }
  }
  const figures = (all: number[]) => {
    const sorted = [...all].sort((a, b) => a - b);
    return { events: sorted.length, p50_ms: percentileOf(sorted, 50), p99_ms: percentileOf(sorted, 99), max_ms: sorted.at(-1) ?? NaN };
  };
  return { treasuries: n, rows, delivery: figures(hook.lags), delivery_at_rest: figures(hook.rest) };
}

export function printEventPath(f: EventPathFigures): void {
  console.log(`\nevent path (${f.treasuries} wallet-mode treasuries per round; ratios against EVENT_LOG=off, same run)`);
  for (const r of f.rows)
    console.log(
      `  ${r.variant.padEnd(8)} ${r.route.padEnd(8)} ${r.rps.toFixed(0).padStart(6)} req/s  x${r.rps_ratio.toFixed(3)}  p50 ${r.p50_us} us (x${r.p50_ratio})  p99 ${r.p99_us} us (x${r.p99_ratio})${r.failures ? `  ${r.failures} failed` : ""}`,
    );
  const line = (d: EventPathFigures["delivery"]) => `p50 ${d.p50_ms} ms, p99 ${d.p99_ms} ms, max ${d.max_ms} ms over ${d.events} events`;
  console.log(`  webhook delivery, change to receiver, under the load: ${line(f.delivery)}`);
  console.log(`  webhook delivery, change to receiver, at rest (one event every 50 ms): ${line(f.delivery_at_rest)}`);
}
