/**
 * npm run bench: load the gateway with autocannon and print requests/s and
 * latency percentiles next to a bare Express hello-world measured in the same
 * run (ratios = gateway / baseline). BENCH_SECONDS and BENCH_CONNECTIONS tune it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import autocannon from "autocannon";
import express from "express";
import { pino } from "pino";
import { loadConfig } from "../gateway/src/config";
import { startGateway } from "../gateway/src/server";
import { closedLoop, percentile } from "./closed-loop";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  non2xx: number;
}

/** a gateway on a free port with its own database and rate limits out of the way */
async function benchGateway(env: Record<string, string> = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-bench-"));
  const config = loadConfig({ PORT: "0", DATA_DIR: dataDir, RATE_LIMIT_READ_PER_MIN: "100000000", RATE_LIMIT_WRITE_PER_MIN: "100000000", CREDENTIALS_PER_HOUR: "100000000", LOG_LEVEL: "silent", ...env });
  const gw = await startGateway({ config, logger: pino({ level: "silent" }), });
  return Object.assign(gw, { dataDir });
}

async function load(name: string, opts: autocannon.Options): Promise<Figures> {
  const result = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts });
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
}

async function main(): Promise<void> {
  const baseline = express();
  baseline.get("/", (_req, res) => {
    res.json({ hello: "world" });
  });
  const bare = baseline.listen(0, "127.0.0.1");
  await new Promise((r) => bare.once("listening", r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

  const gw = await benchGateway();

  let counter = 0;
  const rows: Figures[] = [];
  rows.push(await load("express hello-world (baseline)", { url: bareUrl }));
  rows.push(await load("GET /api/v1/public/gateway-status", { url: `${gw.url}/api/v1/public/gateway-status` }));
  rows.push(
    await load("POST /api/v1/public/preview", {
      url: `${gw.url}/api/v1/public/preview`,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "borrow", amount: 1000, current_ltv: 40 }),
    }),
  );
  rows.push(
    await load("POST /api/v1/treasuries", {
      url: `${gw.url}/api/v1/treasuries`,
      method: "POST",
      headers: { "content-type": "application/json" },
      setupClient: (client) => {
        client.setBody(JSON.stringify({ wallet_address: `0x${(++counter).toString(16).padStart(40, "0")}` }));
      },
    }),
  );

  await gw.close();

  // x402: the unpaid 402 path, and the paid path (verify, handler, settle) on a local Base Sepolia
  const x402 = await benchX402();
  rows.push(x402.unpaid);

  const base = rows[0]!;
  console.log(`\n${SECONDS}s per target, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} cores\n`);
  console.log(["target".padEnd(36), "req/s".padStart(9), "p50 ms".padStart(7), "p90 ms".padStart(7), "p99 ms".padStart(7), "non2xx".padStart(7), "rps ratio".padStart(10), "p50 ratio".padStart(10)].join(" "));
  for (const r of rows) {
    console.log(
      [
        r.name.padEnd(36),
        r.rps.toFixed(0).padStart(9),
        String(r.p50).padStart(7),
        String(r.p90).padStart(7),
        String(r.p99).padStart(7),
        String(r.non2xx).padStart(7),
        (r.rps / base.rps).toFixed(2).padStart(10),
        (base.p50 > 0 ? r.p50 / base.p50 : NaN).toFixed(2).padStart(10),
      ].join(" "),
    );
  }
  console.log(`\npaid x402 paths (GET /api/v1/health: verify, handler, settle on Anvil; ${x402.paid.count} requests each, concurrency ${x402.paid.concurrency}; ratios against v1):`);
  for (const [name, r] of [["v1 X-PAYMENT", x402.paid], ["v2 PAYMENT-SIGNATURE", x402.paidV2], ["MCP tools/call get_health (v2 in _meta)", x402.paidMcp]] as const) {
    console.log(
      `  ${name.padEnd(40)} ${r.rps.toFixed(1).padStart(6)} req/s, p50 ${r.p50.toFixed(1)} ms, p90 ${r.p90.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, failures ${r.failures}; rps ${(r.rps / x402.paid.rps).toFixed(2)}, p50 ${(r.p50 / x402.paid.p50).toFixed(2)}`,
    );
  }
  const loop = await benchWalletLoop();
  console.log(`\nrelay on the fork (verify + simulate + broadcast + receipt, sequential, ${loop.relay.count} relays): ${loop.relay.rps.toFixed(1)} relays/s, p50 ${loop.relay.p50.toFixed(1)} ms, p90 ${loop.relay.p90.toFixed(1)} ms, p99 ${loop.relay.p99.toFixed(1)} ms`);
  console.log(`agent full loop (x402 payment, envelope, policy, preflight, sign, relay x3, read back; deposit of 100 USDC, ${loop.full.count} runs): p50 ${loop.full.p50.toFixed(0)} ms, p90 ${loop.full.p90.toFixed(0)} ms, max ${loop.full.max.toFixed(0)} ms`);
  bare.close();

  // one versus three instances on one PostgreSQL, every server in its own process (bench/instances.ts)
  const { benchInstances } = await import("./instances");
  const layouts = await benchInstances([1, 3]);
  const one = layouts[0]!;
  console.log(`\ninstances on one embedded PostgreSQL (each gateway, the facilitator and PostgreSQL in their own processes; load round-robin; ${os.cpus().length} cores):`);
  console.log(["instances".padEnd(10), "paid req/s".padStart(11), "paid p50".padStart(9), "paid p99".padStart(9), "fail".padStart(5), "bearer req/s".padStart(13), "bearer p99".padStart(11), "paid ratio".padStart(11), "bearer ratio".padStart(13)].join(" "));
  for (const l of layouts) {
    console.log(
      [
        String(l.instances).padEnd(10),
        l.paid.rps.toFixed(1).padStart(11),
        l.paid.p50.toFixed(0).padStart(9),
        l.paid.p99.toFixed(0).padStart(9),
        String(l.paid.failures).padStart(5),
        l.bearer.rps.toFixed(0).padStart(13),
        String(l.bearer.p99).padStart(11),
        (l.paid.rps / one.paid.rps).toFixed(2).padStart(11),
        (l.bearer.rps / one.bearer.rps).toFixed(2).padStart(13),
      ].join(" "),
    );
  }
  console.log(`  paid: ${one.paid.count} requests at concurrency ${one.paid.concurrency}, one facilitator settling each on the local chain`);
}

async function benchWalletLoop() {
  const { startBaseFork } = await import("../fixtures/base-fork");
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { startFacilitator } = await import("../gateway/src/x402/facilitator/main");
  const { SignerAgent } = await import("../signer-agent/src/agent");
  const { AuditLog } = await import("../signer-agent/src/audit-log");
  const { defaultPolicy } = await import("../signer-agent/src/policy");
  const { createWalletClient, createPublicClient, http, parseAbi, publicActions } = await import("viem");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const { base } = await import("viem/chains");

  const [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  const facilitator = await startFacilitator({ rpcUrl: sepolia.rpcUrl, privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d", port: 0 });
  const feeRecipient = devAccount(4).address;
  const gw = await benchGateway({ BASE_RPC_URL: fork.rpcUrl, X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: devAccount(2).address, FEE_RECIPIENT: feeRecipient });
  const dataDir = gw.dataDir;
  try {
    const privateKey = generatePrivateKey();
    const account = privateKeyToAccount(privateKey);
    await fork.fund(account.address, 1_000_000_000_000n);
    await sepolia.fund(account.address, 100_000_000n);
    const policy = { ...defaultPolicy([feeRecipient]), x402_daily_budget_usdc: 1000 };
    const agent = new SignerAgent({ privateKey, gatewayUrl: gw.url, rpcUrl: fork.rpcUrl, x402RpcUrl: sepolia.rpcUrl, policy, audit: new AuditLog(path.join(dataDir, "audit.jsonl")) });

    const full: number[] = [];
    const runs = Number(process.env.BENCH_LOOP_RUNS ?? 10);
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await agent.run("deposit", 100);
      full.push(performance.now() - t0);
    }
    // relays: borrow envelopes (borrow + fee transfer), signed ahead, relayed and timed one by one
    const relays: number[] = [];
    const rounds = Number(process.env.BENCH_RELAY_ROUNDS ?? 15);
    const started = performance.now();
    let relayTime = 0;
    for (let i = 0; i < rounds; i++) {
      const envelope = await agent.request("borrow", 1);
      for (const step of envelope.steps) {
        const signed = await agent.signStep(step);
        const t0 = performance.now();
        await agent.relay(step.tx_id, signed);
        const dt = performance.now() - t0;
        relays.push(dt);
        relayTime += dt;
      }
    }
    void started;
    relays.sort((a, b) => a - b);
    full.sort((a, b) => a - b);
    return {
      relay: { count: relays.length, rps: relays.length / (relayTime / 1000), p50: percentile(relays, 50), p90: percentile(relays, 90), p99: percentile(relays, 99) },
      full: { count: full.length, p50: percentile(full, 50), p90: percentile(full, 90), max: full[full.length - 1]! },
    };
  } finally {
    await gw.close();
    await facilitator.close();
    await Promise.all([fork.stop(), sepolia.stop()]);
  }
}


async function benchX402() {
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { startFacilitator } = await import("../gateway/src/x402/facilitator/main");
  const { createPaymentHeader } = await import("x402/client");
  const { x402Client } = await import("@x402/core/client");
  const { registerExactEvmScheme } = await import("@x402/evm/exact/client");
  const { createWalletClient, http } = await import("viem");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const { baseSepolia } = await import("viem/chains");

  const chain = await startBaseSepolia();
  const facilitator = await startFacilitator({
    rpcUrl: chain.rpcUrl,
    privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    port: 0,
  });
  const gw = await benchGateway({ X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: devAccount(2).address });
  try {
    const unpaid = await load("GET /api/v1/health unpaid (402)", { url: `${gw.url}/api/v1/health` });

    const count = Number(process.env.BENCH_PAID_REQUESTS ?? 200);
    const concurrency = 4;
    const account = privateKeyToAccount(generatePrivateKey());
    await chain.fund(account.address, 3_000_000_000n);
    const wallet = createWalletClient({ account, chain: baseSepolia, transport: http(chain.rpcUrl) });
    const first = await fetch(`${gw.url}/api/v1/health`);
    const challenge = (await first.json()) as { accepts: Parameters<typeof createPaymentHeader>[2][] };
    const requiredV2 = JSON.parse(Buffer.from(first.headers.get("payment-required")!, "base64").toString());
    const v2 = new x402Client();
    registerExactEvmScheme(v2, { signer: account });
    const v2Payload = () => v2.createPaymentPayload(requiredV2);

    /** `count` paid GET /api/v1/health at `concurrency`, each with its own proof, sent by `send` */
    const run = (proofs: unknown[], send: (proof: unknown) => Promise<boolean>) => closedLoop(proofs, concurrency, send);
    const rest = (header: string) => async (proof: unknown) => {
      const res = await fetch(`${gw.url}/api/v1/health`, { headers: { [header]: proof as string } });
      await res.arrayBuffer();
      return res.status === 200;
    };
    const paid = await run(await Promise.all(Array.from({ length: count }, () => createPaymentHeader(wallet as never, 1, challenge.accepts[0]!))), rest("x-payment"));
    const paidV2 = await run(
      await Promise.all(Array.from({ length: count }, async () => Buffer.from(JSON.stringify(await v2Payload())).toString("base64"))),
      rest("payment-signature"),
    );
    // the paid MCP tool call: get_health with the payment in params._meta["x402/payment"], served by its REST twin
    const paidMcp = await run(await Promise.all(Array.from({ length: count }, () => v2Payload())), async (payment) => {
      const res = await fetch(`${gw.url}/api/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_health", arguments: {}, _meta: { "x402/payment": payment } } }),
      });
      const body = (await res.json()) as { result?: { isError?: boolean; _meta?: Record<string, unknown> } };
      return res.status === 200 && body.result?.isError !== true && body.result?._meta?.["x402/payment-response"] !== undefined;
    });
    return { unpaid, paid, paidV2, paidMcp };
  } finally {
    await gw.close();
    await facilitator.close();
    await chain.stop();
  }
}

void main();
