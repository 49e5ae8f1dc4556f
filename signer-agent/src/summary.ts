/**
 * `signer-agent summary`: what a person asks for without a browser, in one
 * place. The treasury (the agent's newest registration, else the one its
 * latest execution acted on) as the gateway states it (GET
 * /api/v1/treasuries/{id}, public); the position read on the agent's own RPC;
 * recent executions and fees paid from the agent's audit log, and from the
 * gateway's audit trail (GET /api/v1/audit) when a key for the treasury is
 * known. Nothing is paid for. Amounts exact (bigint) until rendered.
 */
import { createPublicClient } from "viem";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { parseUsdc } from "@treasury/core/domain/money";
import type { AuditLog } from "./audit-log";
import { ASSETS, type AssetSymbol } from "@treasury/core/domain/assets";
import { exact, roundUnits, usdc, usdcNumber } from "./format";
import { gatewayJson } from "./gateway-client";
import { positionDocument, positionLines, readPosition, type WalletPosition } from "./position";
import type { TreasuryRecordEntry } from "./registration";

export interface Execution {
  at: string;
  action: string;
  amount_micro: bigint;
  fee_micro: bigint;
  treasury_id?: string;
  tx_hash?: string;
  /** a token amount (withdraw or sell of ETH, BTC): the asset and its units */
  asset?: string;
  units?: bigint;
}

export interface Summary {
  wallet: `0x${string}`;
  gateway: string;
  treasury: Record<string, any> | null;
  treasury_error?: string;
  position: WalletPosition | null;
  position_error?: string;
  executions: Execution[];
  fees: { service_micro: bigint; x402_micro: bigint };
  gateway_audit: { entries: { created_at: string; action: string; amount_usdc: number; fee_usdc: number }[]; fee_micro: bigint } | null;
  gateway_audit_error?: string;
}

const RECENT = 10;
const why = (err: unknown) => (err instanceof Error ? err.message.split("\n")[0]! : String(err));

export async function buildSummary(o: {
  wallet: `0x${string}`;
  gatewayUrl: string;
  rpcUrl: string;
  audit: AuditLog;
  registration?: TreasuryRecordEntry;
  bearer?: string;
}): Promise<Summary> {
  const log = o.audit.entries();
  const executed = log.filter((e) => e.event === "executed");
  // the treasury: the one a given key (--bearer) is bound to, else the agent's newest registration, else the one it last acted on
  const bound = o.bearer
    ? ((await gatewayJson(o.gatewayUrl, "GET", "/api/v1/treasury", { bearer: o.bearer }).catch(() => null))?.treasury_id as string | undefined)
    : undefined;
  const treasuryId = bound ?? o.registration?.treasury_id ?? (executed.at(-1)?.treasury_id as string | undefined);
  // the key for that treasury: --bearer, or the one its registration answered
  const key = o.bearer ?? (o.registration?.treasury_id === treasuryId ? o.registration?.api_key : undefined);
  const [treasury, position, audit] = await Promise.allSettled([
    treasuryId ? gatewayJson(o.gatewayUrl, "GET", `/api/v1/treasuries/${treasuryId}`) : Promise.resolve(null),
    readPosition(createPublicClient({ transport: rpcHttp(o.rpcUrl, { retryCount: 0 }) }), o.wallet),
    key ? gatewayAudit(o.gatewayUrl, key) : Promise.resolve(null),
  ]);
  // service fees: the fee transfers this agent signed whose step was relayed; x402: what it paid for requests
  const relayed = new Set(log.filter((e) => e.event === "relayed").map((e) => e.tx_id));
  const serviceMicro = log
    .filter((e) => e.event === "signed" && e.function === "transfer" && relayed.has(e.tx_id))
    .reduce((s, e) => s + BigInt(e.amount_micro ?? "0"), 0n);
  const x402Micro = log.filter((e) => e.event === "x402_payment").reduce((s, e) => s + BigInt(e.amount_micro ?? "0"), 0n);
  return {
    wallet: o.wallet,
    gateway: o.gatewayUrl,
    treasury: treasury.status === "fulfilled" ? treasury.value : { treasury_id: treasuryId },
    ...(treasury.status === "rejected" ? { treasury_error: why(treasury.reason) } : {}),
    position: position.status === "fulfilled" ? position.value : null,
    ...(position.status === "rejected" ? { position_error: `the chain at ${o.rpcUrl} did not answer: ${why(position.reason)}` } : {}),
    executions: executed
      .slice(-RECENT)
      .reverse()
      .map((e) => ({
        at: e.at,
        action: String(e.action),
        amount_micro: BigInt(e.amount_micro ?? "0"),
        fee_micro: BigInt((e.fee_micro as string | undefined) ?? "0"),
        treasury_id: e.treasury_id as string | undefined,
        tx_hash: e.tx_hash,
        ...(typeof e.asset === "string" && e.asset !== "USDC" && typeof e.units === "string" ? { asset: e.asset, units: BigInt(e.units) } : {}),
      })),
    fees: { service_micro: serviceMicro, x402_micro: x402Micro },
    gateway_audit: audit.status === "fulfilled" ? audit.value : null,
    ...(audit.status === "rejected" ? { gateway_audit_error: why(audit.reason) } : {}),
  };
}

/** the treasury's whole fee audit trail (oldest first, paged), its fees summed exactly */
async function gatewayAudit(gatewayUrl: string, key: string) {
  const entries: { created_at: string; action: string; amount_usdc: number; fee_usdc: number }[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const body = await gatewayJson(gatewayUrl, "GET", `/api/v1/audit?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { bearer: key });
    entries.push(...(body.data as typeof entries));
    cursor = body.next_cursor as string | null;
    if (!body.has_more || !cursor) break;
  }
  return { entries, fee_micro: entries.reduce((s, e) => s + parseUsdc(e.fee_usdc), 0n) };
}

/** the summary as one JSON document: exact decimal strings for amounts */
export function summaryDocument(s: Summary) {
  return {
    object: "signer_agent_summary",
    wallet: s.wallet,
    gateway: s.gateway,
    treasury: s.treasury,
    ...(s.treasury_error ? { treasury_error: s.treasury_error } : {}),
    position: s.position ? positionDocument(s.position) : null,
    ...(s.position_error ? { position_error: s.position_error } : {}),
    executions: s.executions.map((e) => ({
      at: e.at,
      action: e.action,
      amount_usdc: exact(e.amount_micro, 6),
      ...(e.asset && e.units !== undefined ? { asset: e.asset, amount: exact(e.units, ASSETS[e.asset as AssetSymbol]?.decimals ?? 18) } : {}),
      fee_usdc: exact(e.fee_micro, 6),
      treasury_id: e.treasury_id ?? null,
      tx_hash: e.tx_hash ?? null,
    })),
    fees: {
      service_fees_usdc: exact(s.fees.service_micro, 6),
      x402_usdc: exact(s.fees.x402_micro, 6),
      total_usdc: exact(s.fees.service_micro + s.fees.x402_micro, 6),
    },
    gateway_audit: s.gateway_audit
      ? { executions: s.gateway_audit.entries.length, fees_usdc: exact(s.gateway_audit.fee_micro, 6), recent: s.gateway_audit.entries.slice(-RECENT).reverse() }
      : null,
    ...(s.gateway_audit_error ? { gateway_audit_error: s.gateway_audit_error } : {}),
  };
}

/** what an execution moved: USDC, or a token amount in its asset (withdraw 0.1 ETH, worth ...) */
function amountOf(e: Execution): string {
  if (!e.asset || e.units === undefined) return e.action === "exit" ? "(everything)" : usdc(e.amount_micro);
  const decimals = ASSETS[e.asset as AssetSymbol]?.decimals ?? 18;
  return `${roundUnits(e.units, decimals, 6)} ${e.asset} (worth ${usdc(e.amount_micro)})`;
}

/** the summary as a person reads it */
export function summaryText(s: Summary): string[] {
  const t = s.treasury;
  const lines = [`wallet    ${s.wallet}`, `gateway   ${s.gateway}`];
  if (!t) lines.push("treasury  none known to this agent: register one (signer-agent register) or run an action (signer-agent run ...)");
  else if (s.treasury_error) lines.push(`treasury  ${t.treasury_id} (the gateway does not say: ${s.treasury_error})`);
  else lines.push(`treasury  ${t.treasury_id}: ${t.execution_mode} mode on ${t.chain}, ${t.preset} preset, ${t.ownership}, ${t.status}`);
  if (s.position) lines.push(`position on ${s.position.chain} (read on the chain):`, ...positionLines(s.position).map((l) => `  ${l}`));
  else lines.push(`position  ${s.position_error ?? "the chain has no treasury market"}`);
  lines.push(s.executions.length ? "recent executions (this agent's audit log, newest first):" : "recent executions: none in this agent's audit log");
  for (const e of s.executions)
    lines.push(`  ${e.at.slice(0, 19).replace("T", " ")}  ${e.action} ${amountOf(e)}, fee ${usdc(e.fee_micro)}${e.tx_hash ? `, tx ${e.tx_hash}` : ""}`);
  lines.push(
    `fees paid ${usdc(s.fees.service_micro + s.fees.x402_micro)}: ${usdc(s.fees.service_micro)} service fees (signed and relayed), ${usdc(s.fees.x402_micro)} x402 for requests`,
  );
  if (s.gateway_audit) {
    const g = s.gateway_audit;
    lines.push(`gateway's audit trail: ${g.entries.length} execution${g.entries.length === 1 ? "" : "s"}, ${usdc(g.fee_micro)} in fees`);
    for (const e of g.entries.slice(-RECENT).reverse())
      lines.push(`  ${e.created_at.slice(0, 19).replace("T", " ")}  ${e.action} ${usdcNumber(e.amount_usdc)}, fee ${usdcNumber(e.fee_usdc)}`);
  } else if (s.gateway_audit_error) lines.push(`gateway's audit trail: not read (${s.gateway_audit_error})`);
  return lines;
}
