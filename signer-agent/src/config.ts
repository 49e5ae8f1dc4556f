/**
 * Where the agent finds its key, policy, log, gateway and fork: flags, then
 * environment, then the running local stack's file (stack-file.ts), then the
 * default ports.
 */
import path from "node:path";
import { readStackFile, type StackFile } from "./stack-file";

export interface AgentConfig {
  keystore: string;
  policy: string;
  auditLog: string;
  gatewayUrl: string;
  rpcUrl: string;
  x402RpcUrl: string;
  /** how x402 is paid: exact (one transfer a call) or session (one deposit, then vouchers) */
  x402Scheme: string;
  /** a session's channel state (<dir>/x402-sessions): a restarted agent continues its channel */
  x402SessionDir: string;
  passphrase: string | undefined;
  bearer: string | undefined;
  devRawKey: `0x${string}` | undefined;
  serveToken: string | undefined;
}

export function agentConfig(
  flags: Record<string, string | boolean>,
  env: Record<string, string | undefined> = process.env,
  stack: StackFile | null = readStackFile(env),
): AgentConfig {
  const dir = (flags["dir"] as string) ?? env.SIGNER_DIR ?? stack?.agent.dir ?? "./.data/agent";
  const pick = (flag: string, envName: string, fallback: string) => (flags[flag] as string) ?? env[envName] ?? fallback;
  return {
    keystore: pick("keystore", "SIGNER_KEYSTORE", path.join(dir, "keystore.json")),
    policy: pick("policy", "SIGNER_POLICY", path.join(dir, "policy.json")),
    auditLog: pick("audit-log", "SIGNER_AUDIT_LOG", path.join(dir, "audit.jsonl")),
    gatewayUrl: pick("gateway", "SIGNER_GATEWAY_URL", stack?.gateway_url ?? "http://127.0.0.1:4020"),
    rpcUrl: pick("rpc", "SIGNER_RPC_URL", stack?.fork_rpc_url ?? "http://127.0.0.1:8545"),
    x402RpcUrl: pick("x402-rpc", "SIGNER_X402_RPC_URL", stack?.x402_rpc_url ?? "http://127.0.0.1:8546"),
    x402Scheme: pick("x402-scheme", "SIGNER_X402_SCHEME", "exact"),
    x402SessionDir: path.join(dir, "x402-sessions"),
    passphrase: env.SIGNER_PASSPHRASE,
    bearer: (flags["bearer"] as string) ?? env.SIGNER_BEARER_KEY,
    devRawKey: flags["dev-raw-key"]
      ? ((env.SIGNER_DEV_PRIVATE_KEY ?? (flags["dev-raw-key"] === true ? undefined : flags["dev-raw-key"])) as `0x${string}` | undefined)
      : undefined,
    serveToken: env.SIGNER_SERVE_TOKEN,
  };
}
