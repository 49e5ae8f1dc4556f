/**
 * The spec's sandbox flow from the command line, and the one-place view:
 * `register` (a treasury for the agent's wallet, with its signed ownership
 * proof), `relay` (an envelope someone asked the gateway for, signed and
 * relayed through the agent's own checks) and `summary`.
 */
import fs from "node:fs";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { AuditLog } from "../audit-log";
import { EnvelopeError, readEnvelope } from "../envelope";
import { RefusedError } from "../errors";
import { loadKey } from "../keystore";
import { AlreadyRegisteredError, existingTreasury, registerTreasury, TreasuryRecord, type ExecutionMode } from "../registration";
import { buildSummary, summaryDocument, summaryText } from "../summary";
import { agentFrom, walletAddress, type CommandContext } from "./agent-commands";
import { parseAmount } from "./amounts";
import { UsageError } from "./args";
import { note, out, printJson } from "./io";
import type { AgentConfig } from "../config";

/** the agent's registrations, beside its keystore (treasury.json, mode 0600: it holds the API keys) */
export const treasuryRecord = (cfg: AgentConfig) => new TreasuryRecord(path.join(path.dirname(cfg.keystore), "treasury.json"));

export async function register({ cfg, flags, log }: CommandContext): Promise<number> {
  const mode = (flags.mode ?? "wallet") as ExecutionMode;
  const wallet = walletAddress(cfg);
  const record = treasuryRecord(cfg);
  const existing = await existingTreasury({ gatewayUrl: cfg.gatewayUrl, wallet, record, audit: new AuditLog(cfg.auditLog) });
  if (existing) {
    const named = existing.treasuryId ?? "a treasury";
    if (flags["only-if-new"]) {
      throw new AlreadyRegisteredError(
        wallet,
        existing.treasuryId,
        `already registered: ${wallet} already stands behind ${named} (${existing.how}); nothing registered (without --only-if-new, register makes another treasury alongside it)`,
      );
    }
    note(`note: ${wallet} already stands behind ${named} (${existing.how}).`);
    note("      The gateway lets a wallet register again: this makes another treasury with its own API key, and from now on");
    note("      the wallet's x402 payments and sign-ins act on the newest proven registration, this one.");
  }
  const privateKey = await loadKey({ keystore: cfg.keystore, passphrase: cfg.passphrase, rawKey: cfg.devRawKey, allowRawKey: Boolean(cfg.devRawKey) });
  const answer = await registerTreasury({ account: privateKeyToAccount(privateKey), gatewayUrl: cfg.gatewayUrl, mode, log });
  record.add({
    treasury_id: answer.treasury_id,
    api_key: answer.api_key,
    execution_mode: answer.execution_mode,
    chain: answer.chain,
    registered_at: new Date().toISOString(),
  });
  log(`kept in ${record.file} (with its API key, mode 0600)`);
  printJson(answer);
  return 0;
}

function readInput(source: string): string {
  if (source === "-") {
    if (process.stdin.isTTY)
      throw new UsageError("relay", "relay reads an envelope: give its file (signer-agent relay deposit.json) or pipe it in (... | signer-agent relay -)");
    return fs.readFileSync(0, "utf8");
  }
  if (!fs.existsSync(source)) throw new UsageError("relay", `no file "${source}": give the file the gateway's answer was saved to, or - for stdin`);
  return fs.readFileSync(source, "utf8");
}

export async function relay({ cfg, positional, flags, log }: CommandContext): Promise<number> {
  const source = positional[0] ?? "-";
  const asset = typeof flags.asset === "string" ? flags.asset : undefined;
  if (typeof flags.amount === "string") parseAmount("relay", "--amount", flags.amount, (asset ?? "usdc").toUpperCase(), 6);
  const envelope = readEnvelope(readInput(source), source === "-" ? "stdin" : source);
  const agent = await agentFrom(cfg, log);
  log(`relaying the ${envelope.action} of ${agent.address}`);
  try {
    const result = await agent.relayEnvelope(envelope, {
      amount: flags.amount as string | undefined,
      target: flags.target as string | undefined,
      asset,
      sell: flags.sell === true,
    });
    printJson(result.receipts.at(-1));
    return 0;
  } catch (err) {
    const body = err instanceof RefusedError ? (err.body as { error?: string } | undefined) : undefined;
    if (body?.error === "envelope_expired")
      throw new EnvelopeError(
        "envelope_expired",
        `envelope ${envelope.tx_id} (${envelope.action}) has expired (the gateway says so): ask the gateway for the ${envelope.action} again and relay the new answer`,
        { cause: err },
      );
    throw err;
  }
}

export async function summary({ cfg, flags, log }: CommandContext): Promise<number> {
  const wallet = walletAddress(cfg);
  log(`reading the chain (${cfg.rpcUrl}) and the gateway (${cfg.gatewayUrl}) for ${wallet}`);
  const s = await buildSummary({
    wallet,
    gatewayUrl: cfg.gatewayUrl,
    rpcUrl: cfg.rpcUrl,
    audit: new AuditLog(cfg.auditLog),
    registration: treasuryRecord(cfg).newest(),
    bearer: cfg.bearer,
  });
  if (flags.json) printJson(summaryDocument(s));
  else for (const line of summaryText(s)) out(line);
  return 0;
}
