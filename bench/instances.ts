/**
 * One versus three gateway instances on one PostgreSQL, each server in its own
 * process (issue 11): an embedded PostgreSQL, a local Base Sepolia, the local
 * facilitator, and N gateways (gateway/src/main.ts) sharing the database.
 * Load is sprayed round-robin over the instances:
 *   - paid x402 reads (GET /api/v1/health): verify, handler, settle through the
 *     one facilitator (each request its own EIP-3009 authorization);
 *   - bearer reads (GET /api/v1/treasury) with autocannon, one client per instance.
 * BENCH_PAID_REQUESTS, BENCH_PAID_CONCURRENCY, BENCH_SECONDS, BENCH_CONNECTIONS tune it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { createPaymentHeader } from "x402/client";
import { freePort } from "../fixtures/anvil";
import { closedLoop } from "./closed-loop";
import { devAccount, startBaseSepolia } from "../fixtures/base-sepolia";

const ROOT = path.resolve(import.meta.dirname, "..");
const FACILITATOR_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

export interface InstanceFigures {
  instances: number;
  paid: { count: number; concurrency: number; rps: number; p50: number; p90: number; p99: number; failures: number };
  bearer: { rps: number; p50: number; p99: number; non2xx: number };
}

/** a child process that is ready once a line of its output matches */
async function child(args: string[], env: Record<string, string>, ready: RegExp | null, children: ChildProcess[]): Promise<string> {
  const proc = spawn(process.execPath, ["--import", "tsx", ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  children.push(proc);
  if (!ready) return "";
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start: ${out}`)), 60_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      const line = out.split("\n").find((l) => ready.test(l));
      if (line) {
        clearTimeout(timer);
        proc.removeAllListeners("exit");
        resolve(line);
      }
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", onData);
    proc.once("exit", (code) => reject(new Error(`${args[0]} exited with ${code}: ${out}`)));
  });
}


async function until(url: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; ; ) {
    if (await fetch(url).then((r) => r.ok).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function benchInstances(counts = [1, 3]): Promise<InstanceFigures[]> {
  const children: ChildProcess[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-instances-"));
  const chain = await startBaseSepolia();
  try {
    const pgLine = await child(["scripts/embedded-postgres-process.ts", path.join(dir, "pg"), String(await freePort())], {}, /"url"/, children);
    const adminUrl = (JSON.parse(pgLine) as { url: string }).url;
    const facilitatorPort = await freePort();
    await child(["gateway/src/x402/facilitator/main.ts"], { FACILITATOR_RPC_URL: chain.rpcUrl, FACILITATOR_PRIVATE_KEY: FACILITATOR_KEY, FACILITATOR_PORT: String(facilitatorPort) }, /facilitator listening/, children);
    const facilitatorUrl = `http://127.0.0.1:${facilitatorPort}`;

    const figures: InstanceFigures[] = [];
    for (const n of counts) {
      // a fresh database per layout
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE bench_${n}`);
      await admin.end();
      const url = new URL(adminUrl);
      url.pathname = `/bench_${n}`;
      const gateways: string[] = [];
      for (let i = 0; i < n; i++) {
        const port = await freePort();
        const dataDir = fs.mkdtempSync(path.join(dir, "gw-"));
        await child(["gateway/src/main.ts"], {
          PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: url.toString(), SECRETS_KEY: "22".repeat(32), LOG_LEVEL: "silent",
          X402_FACILITATOR: "local", X402_FACILITATOR_URL: facilitatorUrl, X402_PAY_TO: devAccount(2).address,
          RATE_LIMIT_READ_PER_MIN: "100000000", RATE_LIMIT_WRITE_PER_MIN: "100000000", CREDENTIALS_PER_HOUR: "100000000",
        }, null, children);
        await until(`http://127.0.0.1:${port}/api/v1/public/gateway-status`);
        gateways.push(`http://127.0.0.1:${port}`);
      }
      figures.push({ instances: n, paid: await paid(chain, gateways), bearer: await bearer(gateways) });
    }
    return figures;
  } finally {
    for (const c of children) c.kill("SIGTERM");
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
  return closedLoop(headers, concurrency, async (header, i) => {
    const res = await fetch(`${gateways[i % gateways.length]}/api/v1/health`, { headers: { "x-payment": header } });
    await res.arrayBuffer();
    return res.status === 200;
  });
}

/** bearer reads: one autocannon client per instance at once, connections split between them */
async function bearer(gateways: string[]): Promise<InstanceFigures["bearer"]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
  const created = (await (await fetch(`${gateways[0]}/api/v1/treasuries`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ wallet_address: privateKeyToAccount(generatePrivateKey()).address }) })).json()) as { api_key: string };
  const results = await Promise.all(
    gateways.map((g) => autocannon({ url: `${g}/api/v1/treasury`, headers: { authorization: `Bearer ${created.api_key}` }, duration: seconds, connections: Math.max(1, Math.round(connections / gateways.length)) })),
  );
  return {
    rps: results.reduce((a, r) => a + r.requests.average, 0),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    non2xx: results.reduce((a, r) => a + r.non2xx, 0),
  };
}

const isMain = process.argv[1]?.endsWith("bench/instances.ts");
if (isMain) {
  const figures = await benchInstances();
  for (const f of figures) console.log(JSON.stringify(f));
}
