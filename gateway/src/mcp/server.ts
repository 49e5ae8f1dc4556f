/**
 * The MCP server (the official TypeScript SDK 2, @modelcontextprotocol/server):
 * one McpServer per request, JSON responses, both protocol revisions from one
 * endpoint. A 2026-07-28 request (its version, capabilities and client in
 * `_meta`, no session) is served by the SDK's createMcpHandler; a 2025-11-25
 * one (initialize, then plain requests) by a stateless Streamable HTTP
 * transport. Every tool
 * is served by its REST twin (rest-twin.ts). Tool failures come back as MCP
 * tool errors carrying the REST error body (`error`, `message`, context
 * fields such as `safe_amount`) and its HTTP status in `structuredContent`;
 * so do arguments the input schema refuses (`invalid_request`) and an unknown
 * tool (`tool_not_found`).
 *
 * A tool whose REST twin has an x402 price can be paid instead of called with
 * a bearer key. Protocol traffic (initialize, notifications,
 * tools/list) and read-only tools are counted in the read window; each call
 * of a tool that changes something takes one write from the caller's write
 * budget (a paid call's is taken by its REST twin, under the payer).
 */
import { createMcpHandler, isLegacyRequest, McpServer, type CallToolResult, type ServerEventBus } from "@modelcontextprotocol/server";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/server/validators/ajv";
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from "@modelcontextprotocol/node";
import type { Request, Response } from "express";
import { statusOf } from "../http/errors";
import { z } from "@treasury/core/schemas/zod";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { PaymentGate } from "../x402/payment-gate";
import type { ToolCallFacts } from "../x402/receipts/digest";
import type { PaidAnswers } from "../x402/receipts/paid-answers";
import type { WalletSignatureAuth } from "../services/wallet-signature";
import { callRestTwin, MCP_PAYMENT_META, MCP_SIGN_IN_META } from "./rest-twin";
import type { ToolDefinition, TwinRoute } from "./tools";
import { refusedSubscription, registerTreasuryResources, subscribedTreasuriesOf, type SubscribedTreasuries } from "./resources";

export const MCP_SERVER_NAME = "agent-treasury-gateway";

/**
 * The JSON Schema validator every request's server shares (the SDK's own, on Ajv): a server made without one
 * makes its own Ajv instance, with its formats, per request. It compiles only an elicitation's requested
 * schema, which this server never sends.
 */
const SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

/** what a tool call needs from the MCP request that carried it */
export interface ToolContext {
  requestId: string;
  /** the MCP request's Authorization header (a bearer key decides, as on REST) */
  bearer?: string;
  /** the PaymentRequired of a priced route, with its signed offers (absent when x402 is off: priced tools then need a key) */
  paymentRequired?: (route: TwinRoute & { siwx?: boolean }, args: Record<string, unknown>) => Promise<Record<string, unknown>>;
  /** serve the call by the REST route, with the request's key, the payment (and the tool call its receipt binds), or the wallet's sign-in */
  dispatch(route: TwinRoute, args: Record<string, unknown>, auth?: { payment?: unknown; signIn?: string; call?: ToolCallFacts }): Promise<CallToolResult>;
  /** the `arguments` of the tools/call request of this id, as the client sent them (before the input schema parsed them) */
  sentArguments(id: string | number | undefined): unknown;
  /** take one write from the caller's write budget, or throw the typed 429 */
  chargeWrite(): Promise<void>;
}

function toolError(err: TreasuryError, requestId: string): CallToolResult {
  const body = { error: err.code, message: err.shortMessage, request_id: requestId, http_status: statusOf(err), ...err.fields };
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** the x402 MCP transport's "payment required": the route's PaymentRequired (v2) with the typed-error fields */
function paymentRequiredResult(required: Record<string, unknown>, requestId: string): CallToolResult {
  const body = {
    ...required,
    message:
      `payment required: pay with x402 (params._meta["${MCP_PAYMENT_META}"] = a PaymentPayload for one of accepts), or send Authorization: Bearer <API key> on the HTTP request` +
      ((required.extensions as Record<string, unknown> | undefined)?.[MCP_SIGN_IN_META]
        ? `; or, free, sign in with the wallet (for the treasury it stands behind): params._meta["${MCP_SIGN_IN_META}"] = the SIGN-IN-WITH-X header value for extensions["${MCP_SIGN_IN_META}"] (the same arguments)`
        : ""),
    request_id: requestId,
    http_status: 402,
  };
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** `era`: the revision the request speaks; only a 2026-07-28 server offers resource subscriptions (resources.ts) */
export function buildMcpServer(
  tools: ToolDefinition[],
  tc: ToolContext,
  version: string,
  log: (err: unknown) => void,
  era: "modern" | "legacy" = "modern",
): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version },
    {
      capabilities: { tools: {}, resources: { subscribe: era === "modern" } },
      jsonSchemaValidator: SCHEMA_VALIDATOR,
      instructions:
        "Agent treasury on Aave V3. Public tools need nothing; treasury tools need `Authorization: Bearer <sandbox or live key>` on the HTTP request " +
        "(create_sandbox_treasury returns a key). prepare_* tools return unsigned envelopes (wallet mode) that you sign locally and send with relay_signed_transaction.",
    },
  );
  // arguments the input schema refuses, an unknown tool: the typed error body too, never bare text
  (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = (message) =>
    toolError(/Tool \S+ not found$/.test(message) ? new TreasuryError("tool_not_found", message) : new TreasuryError("invalid_request", message), tc.requestId);
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: z.object(tool.inputSchema),
        outputSchema: tool.outputSchema,
        annotations: { title: tool.title, ...tool.annotations },
      },
      async (args: Record<string, unknown>, ctx: { mcpReq: { _meta?: Record<string, unknown>; id?: string | number } }) => {
        const extra = { _meta: ctx.mcpReq._meta, requestId: ctx.mcpReq.id };
        try {
          // a tool signed in by the wallet (a downward leg or a read of its own treasury; free, whether or not x402 is on):
          // counted as a paid call is, by its REST twin (the signer's own bucket once proven, else a write of the client's address)
          const signIn = tool.paid?.siwx && !tc.bearer ? extra?._meta?.[MCP_SIGN_IN_META] : undefined;
          if (typeof signIn === "string" && extra?._meta?.[MCP_PAYMENT_META] === undefined) return await tc.dispatch(tool.paid!, args ?? {}, { signIn });
          // a priced tool without a bearer key: paid with x402, or told how to pay
          if (tool.paid && tc.paymentRequired && !tc.bearer) {
            const payment = extra?._meta?.[MCP_PAYMENT_META];
            if (payment === undefined) return paymentRequiredResult(await tc.paymentRequired(tool.paid, args ?? {}), tc.requestId);
            const call = { tool: tool.name, arguments: tc.sentArguments(extra?.requestId) ?? args ?? {} };
            return await tc.dispatch(tool.paid, args ?? {}, { payment, call });
          }
          if (!tool.annotations.readOnlyHint) await tc.chargeWrite();
          return await tc.dispatch(tc.bearer && tool.keyedTwin ? tool.keyedTwin : tool.twin, args ?? {});
        } catch (err) {
          if (err instanceof TreasuryError) return toolError(err, tc.requestId);
          log(err);
          return toolError(new TreasuryError("internal_error", "internal error; quote the request_id when reporting it"), tc.requestId);
        }
      },
    );
  }
  registerTreasuryResources(server, tc);
  return server;
}

/** Let plain JSON-RPC clients (curl with Content-Type: application/json only) in: the answer is JSON either way. */
function acceptJsonAndStream(req: Request): void {
  const wanted = "application/json, text/event-stream";
  const accept = req.headers.accept ?? "";
  if (accept.includes("application/json") && accept.includes("text/event-stream")) return;
  req.headers.accept = wanted;
  const raw: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() !== "accept") raw.push(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  raw.push("Accept", wanted);
  (req as unknown as { rawHeaders: string[] }).rawHeaders = raw;
}

export interface McpDeps {
  tools: ToolDefinition[];
  version: string;
  log: (err: unknown) => void;
  /** x402 for priced tools; absent or disabled: priced tools need a bearer key */
  payments?: PaymentGate;
  /** the wallet's sign-in on the downward legs' tools */
  walletSignature?: Pick<WalletSignatureAuth, "challengeForCall">;
  /** signed offers in a priced tool's PaymentRequired, a signed receipt in a paid call's settlement */
  receipts?: PaidAnswers;
  /** the process's change-event bus: subscriptions/listen streams read it (resources.ts) */
  bus?: ServerEventBus;
  /** the treasuries open listen streams subscribe to (their logs are polled for other instances' events) */
  subscribed?: SubscribedTreasuries;
}

export async function handleMcpPost(req: Request, res: Response, deps: McpDeps): Promise<void> {
  const { tools, version, log, payments } = deps;
  const requestId = res.locals.requestId as string;
  const bearer = req.header("authorization");
  const message = nullIdAsRequest(req.body, res);
  const tc: ToolContext = {
    requestId,
    bearer,
    paymentRequired: payments?.enabled
      ? async (route, args) => {
          const stated = payments.paymentRequired(route);
          const offers = deps.receipts ? await deps.receipts.offers(stated.resource.url, stated.accepts) : {};
          const required = { ...stated, extensions: { ...stated.extensions, ...offers } };
          if (!route.siwx || !deps.walletSignature) return required;
          // a downward leg or an own read: beside the price, the wallet's sign-in bound to this very call's REST twin
          const { idempotency_key: key, ...rest } = args;
          return {
            ...required,
            extensions: {
              ...required.extensions,
              [MCP_SIGN_IN_META]: deps.walletSignature.challengeForCall(route.path, typeof key === "string" ? key : undefined, rest, route.method),
            },
          };
        }
      : undefined,
    dispatch: (route, args, auth) => {
      const { idempotency_key: key, ...rest } = args;
      const { call, ...credential } = auth ?? { bearer };
      return callRestTwin(
        req,
        { ...route, args: rest, idempotencyKey: typeof key === "string" ? key : undefined },
        credential,
        requestId,
        call && deps.receipts ? { answers: deps.receipts, call } : undefined,
      );
    },
    sentArguments: (id) => sentArguments(message, id),
    chargeWrite: async () => {
      const charge = res.locals.chargeWrite as (() => Promise<TreasuryError | undefined>) | undefined;
      const refused = await charge?.();
      if (refused) throw refused;
    },
  };
  const unknown = unknownToolCalled(message, tools);
  const factory = (era: "modern" | "legacy" = "modern") => {
    const server = buildMcpServer(toolsServing(message, tools), tc, version, log, era);
    // SDK 2 answers an unregistered tool with a protocol error: the typed tool error instead, as for every refusal
    if (unknown !== undefined)
      server.registerTool(unknown, { description: "not a tool of this server", inputSchema: z.object({}).loose() }, () =>
        toolError(new TreasuryError("tool_not_found", `Tool ${unknown} not found`), requestId),
      );
    return server;
  };
  acceptJsonAndStream(req);
  if (await isLegacyRequest(await toWebRequest(req, message), message)) {
    // 2025-era traffic (initialize, then requests without the per-request envelope): stateless, JSON answers
    const server = factory("legacy");
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, message);
    return;
  }
  // 2026-07-28: every request carries its version, capabilities and client in _meta; answers are JSON (no tool emits a message before its result)
  // a subscription names only the bearer key's own treasury's resources
  const refused = await refusedSubscription(message, tc);
  if (refused) {
    res.status(200).json({ jsonrpc: "2.0", id: (message as { id?: unknown }).id ?? null, error: refused });
    return;
  }
  // an accepted listen: its treasuries are watched while its stream is open
  const watched = deps.subscribed?.add(subscribedTreasuriesOf(message));
  if (watched) res.on("close", watched);
  const handler = createMcpHandler(() => factory("modern"), { legacy: "reject", onerror: log, ...(deps.bus ? { bus: deps.bus } : {}) });
  res.on("close", () => void handler.close());
  await toNodeHandler(handler)(req, res, message);
}

/**
 * The tools a request's server registers: a single tools/call of a known tool, that tool alone (a server
 * registers each tool's schemas when it is built, once per request: about 40 tools for one call); any other
 * request (tools/list, a batch, an unknown tool's call, which is answered tool_not_found), every tool.
 */
export function toolsServing(body: unknown, tools: ToolDefinition[]): ToolDefinition[] {
  const m = body as { method?: unknown; params?: { name?: unknown } } | null;
  if (!m || typeof m !== "object" || Array.isArray(m) || m.method !== "tools/call") return tools;
  const called = tools.find((t) => t.name === m.params?.name);
  return called ? [called] : tools;
}

/** the name of the tool a single tools/call calls, when no tool has it */
export function unknownToolCalled(body: unknown, tools: ToolDefinition[]): string | undefined {
  const m = body as { method?: unknown; params?: { name?: unknown } } | null;
  if (!m || typeof m !== "object" || Array.isArray(m) || m.method !== "tools/call") return undefined;
  const name = m.params?.name;
  return typeof name === "string" && name.length > 0 && name.length <= 128 && !tools.some((t) => t.name === name) ? name : undefined;
}

/** the `params.arguments` of the tools/call message of this id in a JSON-RPC body (one message, or a batch) */
function sentArguments(body: unknown, id: string | number | undefined): unknown {
  if (id === undefined) return undefined;
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  const call = messages.find(
    (m): m is { params?: { arguments?: unknown } } =>
      typeof m === "object" && m !== null && (m as { id?: unknown }).id === id && (m as { method?: unknown }).method === "tools/call",
  );
  return call ? (call.params?.arguments ?? {}) : undefined;
}

/**
 * The spec allows a request `id` of null (4.2); the SDK's transport takes only
 * strings and numbers. Such a request runs under a placeholder id whose JSON
 * has the length of `null`, and the answer's bytes carry `null` in its place
 * (the same length: headers already written stay true).
 */
const NULL_ID_PLACEHOLDER = -917;
const PLACED = `"id":${NULL_ID_PLACEHOLDER}`;
function nullIdAsRequest(body: unknown, res: Response): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body) || (body as { id?: unknown }).id !== null) return body;
  const swap = (chunk: unknown): unknown => {
    if (typeof chunk === "string") return chunk.includes(PLACED) ? chunk.replace(PLACED, '"id":null') : chunk;
    if (chunk instanceof Uint8Array) {
      const text = Buffer.from(chunk).toString("utf8");
      return text.includes(PLACED) ? Buffer.from(text.replace(PLACED, '"id":null'), "utf8") : chunk;
    }
    return chunk;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((chunk: unknown, ...rest: unknown[]) => write(swap(chunk), ...rest)) as Response["write"];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => end(swap(chunk), ...rest)) as Response["end"];
  return { ...(body as object), id: NULL_ID_PLACEHOLDER };
}
