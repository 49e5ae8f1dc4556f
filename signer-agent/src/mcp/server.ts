/**
 * `signer-agent mcp`: the signer agent as an MCP server (SDK 2, both protocol eras from one factory). An LLM in
 * a host calls tools; the key, the policy, the preflight, the x402 budget and the audit log stay here. An action
 * tool runs the CLI's whole loop (SignerAgent.run / execute) and answers the receipts and the position after.
 *
 * A person in the loop: an action above the policy's confirm_above_usdc, or one of its confirm_actions, is asked
 * for first (input_required on 2026-07-28; the SDK's shim turns it into elicitation on 2025-11-25) with a plain
 * summary of what will be signed; it goes on only on an explicit yes, answered to a request state this process
 * minted (one random id, used once). A host that declared no elicitation gets a refusal that says why.
 *
 * Every failure answers a typed tool error, { error, message, request_id }; none ends the process.
 */
import fs from "node:fs";
import path from "node:path";
import { randomBytes, randomUUID } from "node:crypto";
import { McpServer, inputRequired, acceptedContent, type CallToolResult, type ServerContext } from "@modelcontextprotocol/server";
import { z } from "zod";
import { declarationOf, type TreasuryAction } from "@treasury/core/actions";
import { formatDecimal, parseUsdc } from "@treasury/core/domain/money";
import { formatUnits, parseUnits } from "viem";
import type { SignerAgent } from "../agent";
import type { AuditLog } from "../audit-log";
import { checkStep, type Policy } from "../policy";
import { describeCall } from "../envelope";
import { ExecutedByService, RefusedError, SignerAgentError } from "../errors";
import { positionDocument } from "../position";
import { ACTION_USAGES } from "../cli/actions";
import { ActionOutput, actionDescription, actionInput, AuditOutput, BudgetOutput, PositionOutput, PreviewOutput, READ_TOOLS } from "./tools";

export const SIGNER_MCP_NAME = "signer-agent";

export interface SignerMcpOptions {
  agent: SignerAgent;
  policy: Policy;
  audit: AuditLog;
  gatewayUrl: string;
  /** how x402 is paid: exact, session, or bearer (an API key) */
  scheme: string;
  x402SessionDir: string;
  version: string;
}

/** a typed tool error: { error, message, request_id } in structuredContent and as the text */
export function toolError(error: string, message: string, fields: Record<string, unknown> = {}): CallToolResult {
  const body = { error, message, request_id: `req_${randomUUID().replace(/-/g, "")}`, ...fields };
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** a tool's answer: its document as structuredContent and as the text (exact integers, bigint, as decimal strings) */
function ok(doc: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(doc, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  return { content: [{ type: "text", text }], structuredContent: JSON.parse(text) as Record<string, unknown> };
}

/** a failure as the typed error an LLM reads: a refusal with its stage, the agent's own codes, else internal_error */
function errorResult(err: unknown): CallToolResult {
  if (err instanceof RefusedError) {
    const detail = err.body as { error?: string } | undefined;
    return toolError("refused", `refused at ${err.stage}: ${err.shortMessage}; nothing was signed at this stage`, {
      stage: err.stage,
      ...(detail?.error ? { gateway_error: detail.error } : {}),
    });
  }
  if (err instanceof SignerAgentError) return toolError(err.code, err.shortMessage);
  if (err instanceof RangeError) return toolError("invalid_request", err.message);
  const first = (err instanceof Error ? err.message : String(err)).split("\n")[0]!;
  return toolError("internal_error", /fetch failed|ECONNREFUSED|HTTP request failed/.test(first) ? `a service did not answer: ${first}` : first);
}

/** what is waiting for a person's yes: the tool and its arguments, by the request state minted for it */
interface Pending {
  tool: string;
  args: string;
  expires: number;
}

/** the most asks waiting for an answer at once (the oldest goes first) */
const MAX_PENDING = 64;

const CONFIRM_SCHEMA = {
  type: "object" as const,
  properties: { confirm: { type: "boolean" as const, title: "Sign and send it", description: "true only if the person says yes to exactly this" } },
  required: ["confirm"],
};

/** the MCP server factory: one McpServer per connection (serveStdio, createMcpHandler), the agent and the pending asks shared */
export function signerMcpFactory(o: SignerMcpOptions): () => McpServer {
  const pending = new Map<string, Pending>();
  return () => buildSignerMcpServer(o, pending);
}

/** the gateway's public preview of an action from the wallet's current LTV (read on the chain): its status, its answer, that LTV */
async function gatewayPreview(
  o: SignerMcpOptions,
  action: string,
  amount: string,
): Promise<{ status: number; body: Record<string, unknown>; currentLtv: number }> {
  const p = await o.agent.position();
  const currentLtv = p && p.collateral_base > 0n ? Number((p.debt_base * 10_000n) / p.collateral_base) / 100 : 0;
  const res = await fetch(`${o.gatewayUrl}/api/v1/public/preview`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ action, amount: Number(amount), current_ltv: currentLtv }),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown>, currentLtv };
}

/** why a person must say yes first, or null: the action is one the policy marks, or its USDC amount is above confirm_above_usdc */
function needsConfirmation(policy: Policy, action: TreasuryAction, amount: string, inUsdc: boolean): string | null {
  if (policy.confirm_actions?.includes(action)) return `the policy asks a person for every ${action}`;
  const above = policy.confirm_above_usdc;
  if (above !== undefined && inUsdc && parseUnits(amount, 6) > parseUsdc(above)) return `${amount} USDC is above the policy's confirm_above_usdc of ${above}`;
  return null;
}

/**
 * The plain summary a person reads before anything is asked of the gateway (a no leaves no envelope awaiting a
 * signature and pays nothing): the action and amount, the gateway's estimate (fee, LTV before and after), and what
 * the signer agent will check of the calldata before it signs.
 */
async function summaryOf(
  o: SignerMcpOptions,
  action: TreasuryAction,
  amount: string,
  extra: Record<string, unknown>,
  why: string,
): Promise<{ refused: CallToolResult } | { message: string }> {
  let estimate = "";
  if (action !== "exit") {
    const { status, body: b } = await gatewayPreview(o, action, amount).catch(() => ({ status: 0, body: {} as Record<string, unknown> }));
    // what the gateway would refuse is refused here, without troubling the person
    if (status >= 400 && status < 500 && typeof b.error === "string")
      return {
        refused: toolError("refused", `refused at gateway (its preview): ${String(b.message ?? b.error)}; nothing was asked of the person or signed`, {
          stage: "gateway",
          gateway_error: b.error,
          ...(b.safe_amount !== undefined ? { safe_amount: b.safe_amount } : {}),
        }),
      };
    if (status === 200)
      estimate = ` The gateway estimates: fee ${String(b.service_fee_usdc)} USDC, LTV ${String(b.ltv_before)}% before, ${String(b.ltv_after)}% after.`;
  }
  const flags = Object.entries(extra).map(([k, v]) => (v === true ? k : `${k} ${String(v)}`));
  const unit = ACTION_USAGES.find((u) => u.name === action)?.amount === "amount" ? String(extra.asset ?? "usdc").toUpperCase() : "USDC";
  return {
    message: [
      `The signer agent ${o.agent.address} is asked to sign a ${action}${action === "exit" ? "" : ` of ${amount} ${unit}`}${flags.length ? ` (${flags.join(", ")})` : ""}, because ${why}.${estimate}`,
      `On a yes it asks the gateway for the transactions, signs only calls whose decoded calldata is exactly this ${action} for this wallet within the policy (its contracts, caps, fee at most ${(o.policy.max_fee_bps ?? 200) / 100}%), preflights each on the fork, and sends them.`,
      "Sign and send it?",
    ].join("\n"),
  };
}

/**
 * Whether the host can ask its user a form question: the request's declared capabilities (2026-07-28) or the
 * initialize's (2025-11-25); an empty elicitation capability means form, one of URLs only does not.
 */
function canAsk(server: McpServer, ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const modern = envelope?.["io.modelcontextprotocol/clientCapabilities"] as { elicitation?: unknown } | undefined;
  const e = (modern ?? server.server.getClientCapabilities())?.elicitation as { form?: unknown; url?: unknown } | undefined;
  return e !== undefined && (e.form !== undefined || e.url === undefined);
}

function buildSignerMcpServer(o: SignerMcpOptions, pending: Map<string, Pending>): McpServer {
  const server = new McpServer(
    { name: SIGNER_MCP_NAME, version: o.version },
    {
      capabilities: { tools: {} },
      instructions:
        "The signer agent holds an Aave V3 treasury wallet's key and signs only what its policy allows. Read position, preview and x402_budget first; " +
        "the action tools (deposit, convert, borrow, repay, withdraw, sell, exit) sign and send real transactions. Amounts are decimal text in the unit each tool states.",
    },
  );
  // arguments the input schema refuses: the typed error body, never bare text (an answer its own output schema refuses is this server's fault)
  (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = (message) =>
    toolError(/^Output validation error/.test(message) ? "internal_error" : "invalid_request", message);

  const guarded =
    <A>(fn: (args: A, ctx: ServerContext) => Promise<CallToolResult>) =>
    async (args: A, ctx: ServerContext): Promise<CallToolResult> => {
      try {
        return await fn(args, ctx);
      } catch (err) {
        return errorResult(err);
      }
    };

  const read = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true } as const;

  server.registerTool(
    "position",
    { ...READ_TOOLS.position, inputSchema: z.object({}).strict(), outputSchema: PositionOutput, annotations: { title: READ_TOOLS.position.title, ...read } },
    guarded(async () => {
      const p = await o.agent.position();
      return ok({ address: o.agent.address, position: p ? positionDocument(p) : null });
    }),
  );

  const previewable = ACTION_USAGES.filter((u) => u.amount).map((u) => u.name) as [string, ...string[]];
  server.registerTool(
    "preview",
    {
      ...READ_TOOLS.preview,
      inputSchema: z
        .object({
          action: z.enum(previewable).describe("the action to estimate"),
          amount: z
            .string()
            .regex(/^\d+(\.\d{1,6})?$/, "decimal text, at most 6 decimals")
            .describe('whole USDC as decimal text ("500" = 500 USDC)'),
        })
        .strict(),
      outputSchema: PreviewOutput,
      annotations: { title: READ_TOOLS.preview.title, ...read },
    },
    guarded(async ({ action, amount }: { action: string; amount: string }) => {
      const { status, body, currentLtv } = await gatewayPreview(o, action, amount);
      if (status !== 200) return toolError(String(body.error ?? "gateway_refused"), String(body.message ?? status), { ...body, http_status: status });
      return ok({ preview: body, current_ltv: currentLtv });
    }),
  );

  server.registerTool(
    "x402_budget",
    {
      ...READ_TOOLS.x402_budget,
      inputSchema: z.object({}).strict(),
      outputSchema: BudgetOutput,
      annotations: { title: READ_TOOLS.x402_budget.title, ...read },
    },
    guarded(async () => {
      const micro = (n: number) => parseUsdc(n);
      const spent = o.audit.todayMicro("x402_payment");
      const budget = micro(o.policy.x402_daily_budget_usdc);
      return ok({
        scheme: o.scheme,
        max_price_usdc: formatDecimal(micro(o.policy.x402_max_price_usdc), 6),
        daily_budget_usdc: formatDecimal(budget, 6),
        spent_today_usdc: formatDecimal(spent, 6),
        left_today_usdc: formatDecimal(budget > spent ? budget - spent : 0n, 6),
        deposited_today_usdc: formatDecimal(o.audit.todayMicro("x402_deposit"), 6),
        daily_signing_cap_usdc: formatDecimal(micro(o.policy.daily_cap_usdc), 6),
        signed_today_usdc: formatDecimal(o.audit.todayMicro("signed"), 6),
        per_transaction_cap_usdc: formatDecimal(micro(o.policy.per_transaction_cap_usdc), 6),
        confirm_above_usdc: o.policy.confirm_above_usdc === undefined ? null : formatDecimal(micro(o.policy.confirm_above_usdc), 6),
        confirm_actions: o.policy.confirm_actions ?? [],
        session_channels: sessionChannels(o.x402SessionDir),
      });
    }),
  );

  server.registerTool(
    "audit_log",
    {
      ...READ_TOOLS.audit_log,
      inputSchema: z.object({ limit: z.number().int().min(1).max(500).optional().describe("how many of the newest entries (default 50)") }).strict(),
      outputSchema: AuditOutput,
      annotations: { title: READ_TOOLS.audit_log.title, ...read, openWorldHint: false },
    },
    guarded(async ({ limit }: { limit?: number }) => {
      const all = o.audit.entries();
      return ok({ entries: all.slice(-(limit ?? 50)), total: all.length });
    }),
  );

  for (const u of ACTION_USAGES) {
    const d = declarationOf(u.name);
    server.registerTool(
      u.name,
      {
        title: d.route.summary,
        description: actionDescription(u.name),
        inputSchema: actionInput(u),
        outputSchema: ActionOutput,
        annotations: { title: d.route.summary, readOnlyHint: false, destructiveHint: d.direction === "down", idempotentHint: false, openWorldHint: true },
      },
      guarded(async (args: Record<string, unknown>, ctx) => runAction(o, server, pending, u.name, args, ctx)),
    );
  }
  return server;
}

/** an action: asked for, shown to a person when the policy says so, then checked, signed, relayed and read back */
async function runAction(
  o: SignerMcpOptions,
  server: McpServer,
  pending: Map<string, Pending>,
  action: TreasuryAction,
  args: Record<string, unknown>,
  ctx: ServerContext,
): Promise<CallToolResult> {
  const amount = typeof args.amount === "string" ? args.amount : "0";
  const extra = Object.fromEntries(Object.entries(args).filter(([k, v]) => k !== "amount" && v !== undefined && v !== false));
  const key = JSON.stringify(args);
  const state = ctx.mcpReq.requestState<string>();
  // a retry with the person's answer: only to a state this process minted, for these very arguments, once
  if (state !== undefined) {
    const p = pending.get(state);
    pending.delete(state);
    if (!p || p.tool !== action || p.args !== key || p.expires < Date.now())
      return toolError("invalid_request", "no pending confirmation for this request state and these arguments: call the tool again to be asked");
    const answer = acceptedContent(ctx.mcpReq.inputResponses, "confirm");
    if (answer?.confirm !== true) {
      o.audit.append({ event: "refused", reason: `${action} ${amount}: declined by the person asked` });
      return toolError("declined", `the person asked did not say yes: nothing was asked of the gateway and nothing was signed (${action})`);
    }
    return await run(o, action, amount, extra, true);
  }
  const inUsdc = ACTION_USAGES.find((u) => u.name === action)?.amount === "amount_usdc" || String(extra.asset ?? "usdc") === "usdc";
  const why = needsConfirmation(o.policy, action, amount, inUsdc);
  if (!why) return await run(o, action, amount, extra, false);
  if (!canAsk(server, ctx)) {
    o.audit.append({ event: "refused", reason: `${action} ${amount}: needs a person's yes (${why}); the host cannot ask (no elicitation)` });
    return toolError(
      "confirmation_unavailable",
      `refused: ${why}, so a person must say yes first, and this MCP host declared no elicitation to ask them; nothing was signed. Use a host that can ask, or the CLI (signer-agent run).`,
    );
  }
  const summary = await summaryOf(o, action, amount, extra, why);
  if ("refused" in summary) return summary.refused;
  const { message } = summary;
  const id = randomBytes(24).toString("base64url");
  // what is no longer answerable goes; a host cannot pile up more than MAX_PENDING asks
  for (const [k, v] of pending) if (v.expires < Date.now()) pending.delete(k);
  if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value!);
  pending.set(id, { tool: action, args: key, expires: Date.now() + 10 * 60_000 });
  return inputRequired({
    requestState: id,
    inputRequests: { confirm: inputRequired.elicit({ mode: "form", message, requestedSchema: CONFIRM_SCHEMA }) },
  }) as never;
}

async function run(o: SignerMcpOptions, action: TreasuryAction, amount: string, extra: Record<string, unknown>, confirmed: boolean): Promise<CallToolResult> {
  try {
    return done(o, await o.agent.run(action, amount, extra), action, confirmed);
  } catch (err) {
    if (err instanceof ExecutedByService) return toolError("executed_by_service", err.shortMessage);
    throw err;
  }
}

function done(o: SignerMcpOptions, r: Awaited<ReturnType<SignerAgent["execute"]>>, action: TreasuryAction, confirmed: boolean): CallToolResult {
  const last = r.receipts.at(-1) as { result?: { resulting_ltv?: number } } | undefined;
  return ok({
    action,
    tx_id: r.envelope.tx_id,
    steps: r.envelope.steps.map((s) => describeCall(checkStep(o.policy, s.unsigned_transaction, o.agent.address), o.policy.allowed_targets)),
    receipts: r.receipts.map((x) => ({
      tx_id: x.tx_id,
      tx_hash: x.tx_hash,
      status: x.status,
      block_number: x.block_number ?? null,
      simulated: Boolean(x.simulated),
    })),
    fee_usdc: formatUnits(r.feeMicro, 6),
    resulting_ltv: last?.result?.resulting_ltv ?? null,
    position_after: r.onChain ? positionDocument(r.onChain) : null,
    confirmed_by_user: confirmed,
  });
}

/** the x402 session channels kept on disk: their state's plain fields, never a signature */
function sessionChannels(dir: string): Record<string, unknown>[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".json"))
    .flatMap((f) => {
      try {
        const doc = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Record<string, unknown>;
        return [Object.fromEntries(Object.entries(doc).filter(([k, v]) => !/sig|key|secret|salt/i.test(k) && typeof v !== "object"))];
      } catch {
        return [];
      }
    });
}
