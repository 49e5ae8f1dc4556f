/**
 * The signer agent's full loop (x402 payment, envelope, policy, preflight, sign, relay, read back; a deposit of
 * 100 USDC) paid with `exact` and with a session, in the same run: the offline Base fork, a local Base Sepolia,
 * the facilitator (with sessions' keys) and the gateway each in its own process. Two agents, one per scheme,
 * take turns run by run, so both see the same machine and the same chains. Each agent's first run is counted
 * (exact's creates its treasury; the session's also deposits) and also reported alone.
 */
import path from "node:path";
import { freePort } from "../fixtures/anvil";
import { QUICK } from "./args";
import { percentileOf } from "./http-load";
import { SESSION_FACILITATOR_ENV, SESSION_GATEWAY_ENV, startFacilitatorProcess, startGatewayProcess } from "./processes";
import { dir, keep } from "./session";

export interface LoopFigures {
  runs: number;
  first_ms: number;
  p50_ms: number;
  p90_ms: number;
  max_ms: number;
  /** the paid request alone (the payment, the gateway's envelope), p50 */
  request_p50_ms: number;
  /** transactions sent when the agent paid, over all its runs: exact, a settlement each; a session, its deposits (its vouchers are redeemed later, a claim and a settle per batch of every payer's) */
  payment_transactions: number;
}

export async function agentLoopBySchemes() {
  const { startBaseFork } = await import("../fixtures/base-fork");
  const { startBaseSepolia, devAccount } = await import("../fixtures/base-sepolia");
  const { SignerAgent } = await import("../signer-agent/src/agent");
  const { AuditLog } = await import("../signer-agent/src/audit-log");
  const { defaultPolicy } = await import("../signer-agent/src/policy");
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");

  const [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  try {
    const facilitator = keep(await startFacilitatorProcess(dir, sepolia.rpcUrl, await freePort(), [], SESSION_FACILITATOR_ENV));
    const feeRecipient = devAccount(4).address;
    const gw = keep(
      await startGatewayProcess(dir, {
        BASE_RPC_URL: fork.rpcUrl,
        X402_FACILITATOR_URL: facilitator.url,
        X402_PAY_TO: devAccount(2).address,
        FEE_RECIPIENT: feeRecipient,
        ...SESSION_GATEWAY_ENV,
      }),
    );
    const schemes = ["exact", "session"] as const;
    // one agent per scheme, funded one after the other (each chain's minter sends its transactions in turn)
    const agents = [];
    for (const scheme of schemes) {
      const privateKey = generatePrivateKey();
      const account = privateKeyToAccount(privateKey);
      await fork.fund(account.address, 1_000_000_000_000n);
      await sepolia.fund(account.address, 100_000_000n);
      const agent = new SignerAgent({
        privateKey,
        gatewayUrl: gw.url,
        rpcUrl: fork.rpcUrl,
        x402RpcUrl: sepolia.rpcUrl,
        policy: { ...defaultPolicy([feeRecipient]), x402_daily_budget_usdc: 1000 },
        audit: new AuditLog(path.join(dir, `agent-${scheme}`, "audit.jsonl")),
        x402Scheme: scheme,
      });
      agents.push({ scheme, agent, times: [] as number[], requests: [] as number[] });
    }
    const runs = QUICK ? 4 : Number(process.env.BENCH_SCHEME_LOOP_RUNS ?? 20);
    for (let i = 0; i < runs; i++) {
      // the order alternates: neither scheme always runs first on a chain one run older
      for (const a of i % 2 === 0 ? agents : [...agents].reverse()) {
        // the loop as `run` makes it: the paid request (its envelope), then the envelope checked, signed, relayed, read back
        const t0 = performance.now();
        const envelope = await a.agent.request("deposit", 100);
        a.requests.push(performance.now() - t0);
        await a.agent.execute(envelope, { action: "deposit", amount: 100 });
        a.times.push(performance.now() - t0);
      }
    }
    for (const s of [gw, facilitator]) await s.stop();
    const figures = {} as Record<(typeof schemes)[number], LoopFigures>;
    for (const a of agents) {
      const sorted = [...a.times].sort((x, y) => x - y);
      const audit = new AuditLog(path.join(dir, `agent-${a.scheme}`, "audit.jsonl")).entries();
      // exact: a settlement per payment; a session: its deposits only (vouchers are not sent anywhere)
      const transactions =
        a.scheme === "exact" ? audit.filter((e) => e.event === "x402_payment").length : audit.filter((e) => e.event === "x402_deposit").length;
      figures[a.scheme] = {
        runs: sorted.length,
        first_ms: Math.round(a.times[0]!),
        p50_ms: Math.round(percentileOf(sorted, 50)),
        p90_ms: Math.round(percentileOf(sorted, 90)),
        max_ms: Math.round(sorted.at(-1)!),
        request_p50_ms: Math.round(
          percentileOf(
            [...a.requests].sort((x, y) => x - y),
            50,
          ),
        ),
        payment_transactions: transactions,
      };
    }
    return { ...figures, session_vs_exact_p50: Number((figures.session.p50_ms / figures.exact.p50_ms).toFixed(2)) };
  } finally {
    await Promise.all([fork.stop(), sepolia.stop()]);
  }
}
