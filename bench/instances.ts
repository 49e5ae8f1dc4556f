/**
 * One versus three gateway instances on one PostgreSQL, each server in its own
 * process (issue 11): an embedded PostgreSQL, a local Base Sepolia, the local
 * facilitator, and N gateways sharing the database, each started as
 * production starts it (bench/processes.ts: bundle, log level info).
 * Load is sprayed round-robin over the instances:
 *   - paid x402 reads (GET /api/v1/health): verify, handler, settle through the
 *     one facilitator (each request its own EIP-3009 authorization);
 *   - bearer reads (GET /api/v1/treasury), one load per instance at once (bench/http-load.ts).
 * BENCH_PAID_REQUESTS, BENCH_PAID_CONCURRENCY, BENCH_SECONDS, BENCH_CONNECTIONS tune it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { createPaymentHeader } from "x402/client";
import { freePort } from "../fixtures/anvil";
import { load } from "./http-load";
import { startFacilitatorProcess, startGatewayProcess, startProcess, urlOf, type ServerProcess } from "./processes";
import { devAccount, startBaseSepolia } from "../fixtures/base-sepolia";

export interface InstanceFigures {
  instances: number;
  paid: { count: number; concurrency: number; rps: number; p50: number; p90: number; p99: number; failures: number };
  bearer: { rps: number; p50: number; p99: number; non2xx: number };
}

export async function benchInstances(counts = [1, 3]): Promise<InstanceFigures[]> {
  const servers: ServerProcess[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-instances-"));
  const chain = await startBaseSepolia();
  try {
    const pgProcess = await startProcess(
      ["--import", "tsx", "scripts/embedded-postgres-process.ts", path.join(dir, "pg"), String(await freePort())],
      {},
      /"url"/,
      path.join(dir, "pg.log"),
      [],
      { stdin: "pipe" },
    );
    servers.push(pgProcess);
    const adminUrl = urlOf(pgProcess.line);
    const facilitator = await startFacilitatorProcess(dir, chain.rpcUrl, await freePort());
    servers.push(facilitator);

    const figures: InstanceFigures[] = [];
    for (const n of counts) {
      // a fresh database per layout
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE bench_${n}`);
      await admin.end();
      const url = new URL(adminUrl);
      url.pathname = `/bench_${n}`;
      const layout: (ServerProcess & { url: string })[] = [];
      for (let i = 0; i < n; i++)
        layout.push(
          await startGatewayProcess(dir, { DATABASE_URL: url.toString(), X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: devAccount(2).address }),
        );
      servers.push(...layout);
      const gateways = layout.map((g) => g.url);
      figures.push({ instances: n, paid: await paid(chain, gateways), bearer: await bearer(gateways) });
      for (const g of layout) await g.stop();
    }
    return figures;
  } finally {
    for (const s of servers.reverse()) await s.stop().catch(() => undefined);
    await chain.stop();
  }
}

/** paid reads sprayed round-robin: every request carries its own authorization, settled by the one facilitator */
async function paid(chain: Awaited<ReturnType<typeof startBaseSepolia>>, gateways: string[]): Promise<InstanceFigures["paid"]> {
  const count = Number(process.env.BENCH_PAID_REQUESTS ?? 200);
  const concurrency = Number(process.env.BENCH_PAID_CONCURRENCY ?? 8);
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.fund(account.address, 1_000_000_000n);
  const wallet = createWalletClient({ account, chain: baseSepolia, transport: http(chain.rpcUrl) });
  const challenge = (await (await fetch(`${gateways[0]}/api/v1/health`)).json()) as { accepts: Parameters<typeof createPaymentHeader>[2][] };
  const sign = () => createPaymentHeader(wallet as never, 1, challenge.accepts[0]!);
  // the payer's first paid call creates its treasury: once, before the load
  await fetch(`${gateways[0]}/api/v1/health`, { headers: { "x-payment": await sign() } }).then((r) => r.arrayBuffer());
  const headers = await Promise.all(Array.from({ length: count }, sign));
  // round-robin over the instances
  const r = await load(
    "paid round-robin",
    { url: `${gateways[0]}/api/v1/health`, urlOf: (i) => `${gateways[i % gateways.length]}/api/v1/health`, headersOf: (i) => ({ "x-payment": headers[i]! }) },
    { connections: concurrency, count },
  );
  return { count, concurrency, rps: r.rps, p50: r.p50_us / 1000, p90: r.p90_us / 1000, p99: r.p99_us / 1000, failures: r.failures };
}

/** bearer reads: one load per instance at once, connections split between them */
async function bearer(gateways: string[]): Promise<InstanceFigures["bearer"]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
  const created = (await (
    await fetch(`${gateways[0]}/api/v1/treasuries`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ wallet_address: privateKeyToAccount(generatePrivateKey()).address }),
    })
  ).json()) as { api_key: string };
  const results = await Promise.all(
    gateways.map((g) =>
      load(
        `bearer ${g}`,
        { url: `${g}/api/v1/treasury`, headers: { authorization: `Bearer ${created.api_key}` } },
        { seconds, connections: Math.max(1, Math.round(connections / gateways.length)), warmupSeconds: 1 },
      ),
    ),
  );
  return {
    rps: results.reduce((a, r) => a + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50_us)) / 1000,
    p99: Math.max(...results.map((r) => r.p99_us)) / 1000,
    non2xx: results.reduce((a, r) => a + r.failures, 0),
  };
}

const isMain = process.argv[1]?.endsWith("bench/instances.ts");
if (isMain) {
  const figures = await benchInstances();
  for (const f of figures) console.log(JSON.stringify(f));
}
