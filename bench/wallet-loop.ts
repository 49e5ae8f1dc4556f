/**
 * The wallet loop on the offline Base fork: relays with broadcast and receipt (one wallet in sequence, then
 * many wallets at once) and the signer agent's full loop, paid over x402 on a local Base Sepolia.
 */
import path from "node:path";
import { freePort } from "../fixtures/anvil";
import { percentileOf } from "./http-load";
import { startFacilitatorProcess, startGatewayProcess } from "./processes";
import { dir, json, keep } from "./session";

export /** the wallet loop on the offline Base fork: relay with broadcast and receipt, and the signer agent's full loop */
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
    const gw = keep(
      await startGatewayProcess(dir, {
        BASE_RPC_URL: fork.rpcUrl,
        X402_FACILITATOR_URL: facilitator.url,
        X402_PAY_TO: devAccount(2).address,
        FEE_RECIPIENT: feeRecipient,
      }),
    );
    const privateKey = generatePrivateKey();
    const account = privateKeyToAccount(privateKey);
    await fork.fund(account.address, 1_000_000_000_000n);
    await sepolia.fund(account.address, 100_000_000n);
    const policy = { ...defaultPolicy([feeRecipient]), x402_daily_budget_usdc: 1000 };
    const agent = new SignerAgent({
      privateKey,
      gatewayUrl: gw.url,
      rpcUrl: fork.rpcUrl,
      x402RpcUrl: sepolia.rpcUrl,
      policy,
      audit: new AuditLog(path.join(dir, "audit.jsonl")),
    });
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
        const t = await json(`${gw.url}/api/v1/treasuries`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ wallet_address: a.address }),
        });
        const env = await json(`${gw.url}/api/v1/deposits`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${t.api_key}`, "idempotency-key": `bench-many-${a.address}` },
          body: JSON.stringify({ amount_usdc: 100 }),
        });
        if (!Array.isArray(env.steps)) throw new Error(`no envelope for the concurrent relays: ${JSON.stringify(env)}`);
        return Promise.all(
          env.steps.map(async (step: any) => {
            const u = step.unsigned_transaction;
            const signed = await a.signTransaction({
              type: "eip1559",
              chainId: u.chain_id,
              nonce: u.nonce,
              to: u.to,
              data: u.data,
              value: BigInt(u.value),
              gas: 600_000n,
              maxFeePerGas: 2_000_000_000n,
              maxPriorityFeePerGas: 1_000_000n,
            });
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
            const r = await fetch(`${gw.url}/api/v1/relay`, {
              method: "POST",
              headers: { "content-type": "application/json", "idempotency-key": `bench-many-${w}-${i}` },
              body,
            });
            const answer = await r.text();
            if (r.status !== 200 && manyFailures++ === 0)
              console.error(`a concurrent relay failed (wallet ${w}, step ${i}): ${r.status} ${answer.slice(0, 400)}`);
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
      relay_broadcast: {
        count: relays.length,
        per_second_sequential: Number((relays.length / total).toFixed(1)),
        p50_ms: Number(percentileOf(relays, 50).toFixed(1)),
        p99_ms: Number(percentileOf(relays, 99).toFixed(1)),
      },
      relay_broadcast_many_wallets: {
        wallets,
        workers,
        count: many.length,
        failures: manyFailures,
        per_second: Number(((many.length - manyFailures) / manySeconds).toFixed(1)),
        p50_ms: Number(percentileOf(many, 50).toFixed(1)),
        p99_ms: Number(percentileOf(many, 99).toFixed(1)),
      },
      agent_loop: {
        runs: full.length,
        p50_ms: Math.round(percentileOf(full, 50)),
        p90_ms: Math.round(percentileOf(full, 90)),
        max_ms: Math.round(full[full.length - 1]!),
      },
    };
  } finally {
    await Promise.all([fork.stop(), sepolia.stop()]);
  }
}
