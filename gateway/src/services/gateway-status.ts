/**
 * The gateway status document (spec 2.17), shared by REST and MCP. Every
 * field is read from what the running service does: the store answers, and
 * per chain whether actions are broadcast (an RPC is configured), to what kind
 * of network (live, the sandbox's local Anvil, or another test network),
 * whether the sandbox funds wallets there, and which Aave version its Pool runs
 * (read from the Pool: its POOL_REVISION and the version that has it).
 */
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { AavePoolVersion } from "../chain/chain-gateway";
import { SUPPORTED_ASSETS } from "@treasury/core/domain/assets";
import type { Clock } from "../lib/clock";
import { API_VERSION } from "../schemas/api-version";

export interface ChainExecution {
  chain: TreasuryChain;
  /** `broadcast`: relayed transactions are sent to the chain; `simulated`: applied to the sandbox ledger */
  execution: "broadcast" | "simulated";
  network: "live" | "local_sandbox_chain" | "test_network" | "none";
  /** the sandbox funds new wallets and provides the steps a one-signature client does not sign */
  sandbox_funding: boolean;
  /** the chain's Aave Pool as the chain says (null: no RPC, nothing read) */
  aave: { pool: `0x${string}`; pool_revision: number | null; version: string | null } | null;
}

/** the status document's `aave` of a chain's Pool read */
export const aaveOfPool = (p: AavePoolVersion): ChainExecution["aave"] => ({ pool: p.pool, pool_revision: p.revision, version: p.version });

/** `ping` asks the store to answer (a failure is a typed 500); `chains` says how each chain executes */
export async function gatewayStatusDocument(
  deps: { clock: Clock; ping: () => Promise<unknown>; chains: () => Promise<ChainExecution[]> },
  startedAt: Date,
  version: string,
) {
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

/**
 * The status document's JSON text, written from parts: what does not move with the clock (every field but
 * `uptime_seconds` and `time`) is serialized once per distinct answer of `chains`, and each request adds the
 * two clock fields. Building the document and its `JSON.stringify` were 5-6% of `GET gateway-status` in the
 * bench's profile. The text is the same as `JSON.stringify` of `gatewayStatusDocument` (same keys in the same
 * order, same values: gateway-status.test.ts compares them).
 */
export function gatewayStatusWriter(
  deps: { clock: Clock; ping: () => Promise<unknown>; chains: () => Promise<ChainExecution[]> },
  startedAt: Date,
  version: string,
): () => Promise<string> {
  let fixed: { key: string; head: string; middle: string } | undefined;
  return async () => {
    const [, chains] = await Promise.all([deps.ping(), deps.chains()]);
    const now = deps.clock.now();
    let key = "";
    for (const c of chains) key += `${c.chain}/${c.execution}/${c.network}/${c.sandbox_funding}/${c.aave?.pool}/${c.aave?.pool_revision}/${c.aave?.version};`;
    if (fixed?.key !== key) {
      const doc = await gatewayStatusDocument({ clock: { now: () => startedAt }, ping: async () => undefined, chains: async () => chains }, startedAt, version);
      const text = JSON.stringify(doc);
      // the document's text around its two clock fields: `"uptime_seconds":0` and `"time":"..."}` (the last key)
      const uptime = `"uptime_seconds":${doc.uptime_seconds}`;
      const time = `"time":${JSON.stringify(doc.time)}}`;
      const at = text.indexOf(uptime);
      if (at < 0 || !text.endsWith(time))
        throw new Error("the gateway status document's keys moved: gatewayStatusWriter needs its clock fields where it expects them");
      fixed = {
        key,
        head: text.slice(0, at + uptime.length - String(doc.uptime_seconds).length),
        middle: text.slice(at + uptime.length, text.length - time.length),
      };
    }
    return `${fixed.head}${Math.floor((now.getTime() - startedAt.getTime()) / 1000)}${fixed.middle}"time":"${now.toISOString()}"}`;
  };
}
