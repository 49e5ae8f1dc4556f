/**
 * The agent registers a treasury for its own wallet: it asks the gateway for
 * the ownership statement (GET /api/v1/treasuries/ownership-statement),
 * rebuilds it from its own facts (this wallet, this mode, this chain; the
 * service, nonce and time as the gateway stated them) so it signs only a
 * registration of itself, signs it (EIP-712) and registers (POST
 * /api/v1/treasuries with the proof). What it registered is kept in the
 * agent's directory (treasury.json, mode 0600: it holds the API key).
 *
 * The gateway lets a wallet register again: each registration is a treasury
 * of its own with its own key, and the newest proven one is what the wallet's
 * x402 payments and sign-ins act on from then on (treasury-store.ts
 * `findOwnedByWallet`). `existingTreasury` says what the wallet already has.
 */
import fs from "node:fs";
import path from "node:path";
import { getAddress, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { registrationStatement } from "@treasury/core/domain/statements";
import type { AuditLog } from "./audit-log";
import { AlreadyRegisteredError, StatementMismatch } from "./errors";
import { GatewayError, gatewayJson } from "./gateway-client";

export { AlreadyRegisteredError, StatementMismatch };

export type ExecutionMode = "wallet" | "managed";

export interface TreasuryRecordEntry {
  treasury_id: string;
  api_key?: string;
  execution_mode: string;
  chain: string;
  registered_at: string;
}

/** the agent's registrations, newest last (<dir>/treasury.json) */
export class TreasuryRecord {
  constructor(readonly file: string) {}

  entries(): TreasuryRecordEntry[] {
    if (!fs.existsSync(this.file)) return [];
    const doc = JSON.parse(fs.readFileSync(this.file, "utf8")) as { treasuries?: TreasuryRecordEntry[] };
    return doc.treasuries ?? [];
  }

  newest(): TreasuryRecordEntry | undefined {
    return this.entries().at(-1);
  }

  add(e: TreasuryRecordEntry): void {
    fs.mkdirSync(path.dirname(path.resolve(this.file)), { recursive: true });
    const treasuries = [...this.entries(), e];
    fs.writeFileSync(this.file, `${JSON.stringify({ treasuries }, null, 2)}\n`, { mode: 0o600 });
  }
}

/** the treasury the wallet already stands behind, as far as the agent knows: its own record, its audit log, then the gateway's public view */
export async function existingTreasury(o: {
  gatewayUrl: string;
  wallet: `0x${string}`;
  record: TreasuryRecord;
  audit: AuditLog;
}): Promise<{ treasuryId?: string; how: string } | null> {
  const registered = o.record.newest();
  if (registered)
    return { treasuryId: registered.treasury_id, how: `${registered.execution_mode} mode, registered by this agent at ${registered.registered_at}` };
  const used = o.audit
    .entries()
    .filter((e) => e.event === "executed" && typeof e.treasury_id === "string")
    .at(-1);
  if (used) return { treasuryId: used.treasury_id as string, how: `used by this agent's ${String(used.action)} at ${used.at}` };
  try {
    await gatewayJson(o.gatewayUrl, "GET", `/api/v1/public/portfolio-state?address=${o.wallet}`);
    return { how: "the gateway has one for this wallet (made by an x402 payment or a registration)" };
  } catch (err) {
    if (err instanceof GatewayError && err.status === 404) return null;
    throw err;
  }
}

/**
 * The service a statement names must be the gateway this agent talks to: a statement for another service, passed
 * on by a gateway, would register the wallet there with a key the passing gateway keeps. The gateway's URL as the
 * agent reaches it (its origin), or SIGNER_SERVICE_URL when the gateway's public URL differs (behind a proxy).
 */
export function assertServiceIsGateway(service: unknown, gatewayUrl: string, expected = process.env.SIGNER_SERVICE_URL): string {
  const origin = (u: string) => {
    try {
      return new URL(u).origin;
    } catch {
      return u;
    }
  };
  if (typeof service !== "string" || origin(service) !== origin(expected ?? gatewayUrl)) {
    throw new StatementMismatch(
      `the statement names the service ${String(service)}, but this agent talks to ${expected ?? gatewayUrl}: not signed (set SIGNER_SERVICE_URL to the gateway's public URL if that is what it is)`,
    );
  }
  return service;
}

/** sign the gateway's ownership statement for this wallet and register; returns the gateway's answer (treasury_id, api_key, ...) */
export async function registerTreasury(o: {
  account: PrivateKeyAccount;
  gatewayUrl: string;
  mode: ExecutionMode;
  chain?: TreasuryChain;
  log?: (line: string) => void;
}): Promise<Record<string, any>> {
  const chain = o.chain ?? "base";
  const log = o.log ?? (() => undefined);
  const wallet = o.account.address;
  log(`asking ${o.gatewayUrl} for the ownership statement of ${wallet} (${o.mode} mode, ${chain})`);
  const q = new URLSearchParams({ wallet_address: wallet, chain, execution_mode: o.mode });
  const statement = await gatewayJson(o.gatewayUrl, "GET", `/api/v1/treasuries/ownership-statement?${q}`);
  const message = (statement.typed_data?.message ?? {}) as Record<string, unknown>;
  if (typeof message.service !== "string" || typeof statement.nonce !== "string" || typeof statement.issued_at !== "string") {
    throw new StatementMismatch("the gateway's ownership statement has no service, nonce or issued_at: not signed");
  }
  // signed as rebuilt here: a registration of this wallet, in this mode, on this chain, for this gateway, and nothing else
  const typed = registrationStatement({
    service: assertServiceIsGateway(message.service, o.gatewayUrl),
    wallet,
    chain,
    executionMode: o.mode,
    nonce: statement.nonce,
    issuedAt: statement.issued_at,
  });
  const asked = statement.typed_data as { primaryType?: string; message?: Record<string, unknown>; domain?: Record<string, unknown> };
  const same =
    asked.primaryType === typed.primaryType &&
    typeof asked.message?.wallet === "string" &&
    getAddress(asked.message.wallet) === wallet &&
    asked.message?.executionMode === o.mode &&
    Number(asked.domain?.chainId) === typed.domain.chainId;
  if (!same) throw new StatementMismatch(`the gateway asked to sign a statement that is not a ${o.mode} registration of ${wallet} on ${chain}: not signed`);
  log(`signing the statement with the agent's key (EIP-712, service ${message.service})`);
  const signature: Hex = await o.account.signTypedData(typed);
  log("registering the treasury (POST /api/v1/treasuries)");
  const treasury = await gatewayJson(o.gatewayUrl, "POST", "/api/v1/treasuries", {
    body: { wallet_address: wallet, chain, execution_mode: o.mode, ownership_proof: { signature, nonce: statement.nonce, issued_at: statement.issued_at } },
  });
  log(`registered ${treasury.treasury_id} (${treasury.execution_mode} mode, ownership ${treasury.ownership})`);
  return treasury;
}
