/**
 * The agent's own commands: init, address, balance, run, serve, where. Each
 * gets the parsed command line (checked against spec.ts) and the agent's
 * configuration; it prints its answer on stdout and its progress on stderr.
 */
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { createPublicClient, formatUnits, isAddress, parseUnits } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { declarationOf } from "@treasury/core/actions";
import { SignerAgent } from "../agent";
import { ExecutedByService, SignerAgentError } from "../errors";
import { X402_SCHEMES } from "../gateway-access";
import { AuditLog } from "../audit-log";
import type { AgentConfig } from "../config";
import { pct } from "../format";
import { createKeystore, keystoreAddress, loadKey, promptPassphrase } from "../keystore";
import { defaultPolicy, loadPolicy } from "../policy";
import { positionDocument, positionLine, positionLines, readPosition } from "../position";
import { serveAgent } from "../serve";
import { readStackFile } from "../stack-file";
import { isTreasuryAction } from "./actions";
import { checkActionArgs } from "./amounts";
import { UsageError } from "./args";
import { out, printJson } from "./io";

export interface CommandContext {
  cfg: AgentConfig;
  positional: string[];
  flags: Record<string, string | boolean>;
  /** progress on stderr */
  log: (line: string) => void;
}

/** the agent with its key (the keystore opened with its passphrase) and its policy */
export async function agentFrom(cfg: AgentConfig, log: (line: string) => void): Promise<SignerAgent> {
  const privateKey = await loadKey({ keystore: cfg.keystore, passphrase: cfg.passphrase, rawKey: cfg.devRawKey, allowRawKey: Boolean(cfg.devRawKey) });
  if (!fs.existsSync(cfg.policy))
    throw new SignerAgentError("no_policy", `no policy at ${cfg.policy}: create one with \`signer-agent init\` (or point SIGNER_POLICY at yours)`);
  let policy;
  try {
    policy = loadPolicy(cfg.policy);
  } catch (err) {
    // a file that is not a policy: loadPolicy's own words (a plain Error, or JSON's), typed here
    throw new SignerAgentError("invalid_policy", (err as Error).message.split("\n")[0]!, { cause: err });
  }
  const x402Scheme = X402_SCHEMES.find((s) => s === cfg.x402Scheme);
  if (!x402Scheme) throw new UsageError("", `SIGNER_X402_SCHEME "${cfg.x402Scheme}" is not one of ${X402_SCHEMES.join("|")}`);
  return new SignerAgent({
    privateKey,
    gatewayUrl: cfg.gatewayUrl,
    rpcUrl: cfg.rpcUrl,
    x402RpcUrl: cfg.x402RpcUrl,
    x402Scheme,
    x402SessionDir: cfg.x402SessionDir,
    policy,
    audit: new AuditLog(cfg.auditLog),
    bearer: cfg.bearer,
    progress: log,
  });
}

/** the wallet's address without opening the keystore (its address is in the clear), or of the development key */
export const walletAddress = (cfg: AgentConfig): `0x${string}` => (cfg.devRawKey ? privateKeyToAccount(cfg.devRawKey).address : keystoreAddress(cfg.keystore));

export async function init({ cfg, flags }: CommandContext): Promise<number> {
  const recipient = flags["fee-recipient"];
  if (typeof recipient === "string" && !isAddress(recipient))
    throw new UsageError("init", `--fee-recipient "${recipient}" is not an address: 0x and 40 hex characters`);
  const passphrase = cfg.passphrase ?? (await promptPassphrase("new keystore passphrase: "));
  if (passphrase.length < 8) throw new UsageError("init", "the passphrase is too short: choose one of at least 8 characters (SIGNER_PASSPHRASE)");
  const address = await createKeystore(cfg.keystore, passphrase, cfg.devRawKey);
  if (!fs.existsSync(cfg.policy)) {
    fs.mkdirSync(path.dirname(path.resolve(cfg.policy)), { recursive: true });
    fs.writeFileSync(
      cfg.policy,
      `${JSON.stringify(defaultPolicy([typeof recipient === "string" ? recipient : "0x000000000000000000000000000000000000fee5"]), null, 2)}\n`,
    );
  }
  out(`keystore ${cfg.keystore} for ${address}; policy ${cfg.policy}`);
  return 0;
}

export async function address({ cfg }: CommandContext): Promise<number> {
  out(walletAddress(cfg));
  return 0;
}

export async function balance({ cfg, flags }: CommandContext): Promise<number> {
  const wallet = walletAddress(cfg);
  const p = await readPosition(createPublicClient({ transport: rpcHttp(cfg.rpcUrl, { retryCount: 0 }) }), wallet);
  if (flags.json) {
    printJson({ object: "wallet_balance", address: wallet, position: p ? positionDocument(p) : null });
    return 0;
  }
  if (!p) {
    out(`${wallet}: the chain at ${cfg.rpcUrl} has no treasury market`);
    return 0;
  }
  out(`${wallet} on ${p.chain} (chain ${p.chain_id})`);
  for (const line of positionLines(p)) out(`  ${line}`);
  return 0;
}

export async function run({ cfg, positional, flags, log }: CommandContext): Promise<number> {
  const [action, ...rest] = positional;
  if (!isTreasuryAction(action)) throw new UsageError("run", `unknown action "${action}"`);
  const { amount, unit } = checkActionArgs("run", action, rest, flags);
  const agent = await agentFrom(cfg, log);
  log(`agent ${agent.address}, paying with ${cfg.bearer ? "a bearer key" : cfg.x402Scheme === "session" ? "an x402 session" : "x402"}`);
  const shown = amount === undefined ? "" : ` ${formatUnits(parseUnits(amount, 6), 6)} ${unit}`;
  let result;
  try {
    result = await agent.run(action, amount ?? "0", flags);
  } catch (err) {
    if (!(err instanceof ExecutedByService)) throw err;
    // the wallet's requests act on a managed treasury: the service executed it
    const r = err.receipt as Record<string, any>;
    out(
      `done: ${action}${shown} by the service (a managed treasury: nothing to sign), receipt ${r[declarationOf(action).receiptId] ?? "?"} ${r.status ?? ""}, resulting LTV ${pct(r.ltv_after)}`,
    );
    return 0;
  }
  const last = result.receipts.at(-1)!;
  out(`done: ${action}${shown}, resulting LTV ${pct(last.result?.resulting_ltv)}, tx ${last.tx_hash} (${last.simulated ? "simulated" : "confirmed on chain"})`);
  if (result.onChain) out(`on chain: ${positionLine(result.onChain)}`);
  return 0;
}

export async function serve({ cfg, flags, log }: CommandContext): Promise<number> {
  const port = flags.port === undefined ? 4030 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535 || !/^\d+$/.test(String(flags.port ?? "4030")))
    throw new UsageError("serve", `--port "${String(flags.port)}" is not a port: a whole number from 0 to 65535`);
  const token = cfg.serveToken ?? randomBytes(24).toString("base64url");
  const agent = await agentFrom(cfg, log);
  await serveAgent(agent, { port, token });
  out(`signing endpoint on http://127.0.0.1:${port} for ${agent.address}${cfg.serveToken ? "" : `; token ${token}`}`);
  await new Promise(() => undefined);
  return 0;
}

export async function where({ cfg, positional }: CommandContext): Promise<number> {
  const stack = readStackFile();
  const urls: Record<string, string> = {
    gateway: cfg.gatewayUrl,
    rpc: cfg.rpcUrl,
    "x402-rpc": cfg.x402RpcUrl,
    facilitator: stack?.facilitator_url ?? "http://127.0.0.1:4021",
  };
  out(urls[positional[0] ?? "gateway"]!);
  return 0;
}
