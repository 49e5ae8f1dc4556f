/**
 * The gateway status document (spec 2.17), shared by REST and MCP. Every
 * field is read from what the running service does: the store answers, and
 * per chain whether actions are broadcast (an RPC is configured), to what kind
 * of network (live, the sandbox's local Anvil, or another test network), and
 * whether the sandbox funds wallets there.
 */
import { SUPPORTED_ASSETS } from "../domain/assets";
import { API_VERSION } from "../http/openapi";
import type { Clock } from "../lib/clock";

export interface ChainExecution {
  chain: "base" | "arbitrum";
  /** `broadcast`: relayed transactions are sent to the chain; `simulated`: applied to the sandbox ledger */
  execution: "broadcast" | "simulated";
  network: "live" | "local_sandbox_chain" | "test_network" | "none";
  /** the sandbox funds new wallets and provides the steps a one-signature client does not sign */
  sandbox_funding: boolean;
}

/** `ping` asks the store to answer (a failure is a typed 500); `chains` says how each chain executes */
export async function gatewayStatusDocument(deps: { clock: Clock; ping: () => Promise<unknown>; chains: () => Promise<ChainExecution[]> }, startedAt: Date, version: string) {
  const now = deps.clock.now();
  const [, chains] = await Promise.all([deps.ping(), deps.chains()]);
  const modes = new Set(chains.map((c) => c.execution));
  return {
    object: "gateway_status" as const,
    status: "online",
    supported_assets: SUPPORTED_ASSETS,
    version,
    api_version: API_VERSION,
    uptime_seconds: Math.floor((now.getTime() - startedAt.getTime()) / 1000),
    // a summary of `chains`; treasuries of free sandbox keys are always simulated
    execution: modes.size === 1 ? [...modes][0]! : "mixed",
    chains,
    sandbox_key_treasuries: "simulated",
    time: now.toISOString(),
  };
}
