/**
 * Paid MCP tool calls (the x402 MCP transport, version 2): a priced tool called
 * without a bearer key answers a tool error carrying the route's
 * PaymentRequired in `structuredContent`; called with
 * `params._meta["x402/payment"]`, it is served by its REST twin, in process
 * over the loopback, with the proof in the header of its version
 * (PAYMENT-SIGNATURE, or X-PAYMENT for a version 1 payload). So a paid tool
 * call gets exactly the REST route's order and guarantees: the proof matched
 * to the route and price, verified and locked, every check and the treasury's
 * slot claimed before settlement, settled once, executed, and a refusal never
 * charged. Its settlement comes back in `result._meta["x402/payment-response"]`;
 * a settlement that failed returns only the payment error.
 *
 * The loopback request carries this process's dispatch token: the rate limiter
 * counts it under the verified payer only (the MCP request itself was counted
 * under its client).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Request } from "express";
import { fromHeaderJson, PAYMENT_HEADERS, toHeaderJson } from "../x402/payment-match";

/** the MCP `_meta` keys of the x402 MCP transport */
export const MCP_PAYMENT_META = "x402/payment";
export const MCP_PAYMENT_RESPONSE_META = "x402/payment-response";

export const INTERNAL_DISPATCH_HEADER = "x-treasury-internal-dispatch";
const TOKEN = randomBytes(32).toString("hex");

/** was this request sent by this process's paid-call dispatch? */
export function isInternalDispatch(req: Request): boolean {
  const sent = req.header(INTERNAL_DISPATCH_HEADER);
  if (!sent || sent.length !== TOKEN.length) return false;
  return timingSafeEqual(Buffer.from(sent), Buffer.from(TOKEN));
}

export interface RestCall {
  method: "GET" | "POST";
  path: string;
  body?: Record<string, unknown>;
  idempotencyKey?: string;
}

/** the address the MCP request came in on: this process's own server */
function selfUrl(req: Request): string {
  const host = req.socket.localAddress ?? "127.0.0.1";
  return `http://${host.includes(":") ? `[${host}]` : host}:${req.socket.localPort}`;
}

/**
 * Serve a priced tool call through its REST route with the payment of
 * `_meta["x402/payment"]`; answers the tool result the x402 MCP transport
 * defines (success with the settlement in `_meta`, or a tool error).
 */
export async function paidToolCall(req: Request, call: RestCall, payment: unknown, requestId: string): Promise<CallToolResult> {
  const version = (payment as { x402Version?: unknown } | null)?.x402Version === 1 ? 1 : 2;
  const headers: Record<string, string> = {
    [PAYMENT_HEADERS[version].payment]: toHeaderJson(payment ?? null),
    [INTERNAL_DISPATCH_HEADER]: TOKEN,
    "x-request-id": requestId,
  };
  if (call.idempotencyKey) headers["idempotency-key"] = call.idempotencyKey;
  if (call.body) headers["content-type"] = "application/json";
  const res = await fetch(`${selfUrl(req)}${call.path}`, { method: call.method, headers, body: call.body ? JSON.stringify(call.body) : undefined });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { error: "internal_error", message: "the paid call's answer was not JSON", request_id: requestId };
  }
  if (res.status === 402) {
    // the x402 MCP transport's refusal: the PaymentRequired object (v2), with the typed-error fields beside it
    const required = fromHeaderJson(res.headers.get(PAYMENT_HEADERS[2].required)) ?? {};
    const { x402Version: _v1, accepts: _a1, ...typed } = body;
    const structured = { ...required, ...typed, error: body.error ?? required.error, http_status: 402 };
    return { isError: true, structuredContent: structured, content: [{ type: "text", text: JSON.stringify(structured) }] };
  }
  if (res.status >= 400) {
    const structured = { ...body, http_status: res.status };
    return { isError: true, structuredContent: structured, content: [{ type: "text", text: JSON.stringify(structured) }] };
  }
  const settlement = fromHeaderJson(res.headers.get(PAYMENT_HEADERS[version].response));
  const structured = { ...body, http_status: res.status, idempotent_replayed: res.headers.get("idempotent-replayed") === "true" };
  return {
    structuredContent: structured,
    content: [{ type: "text", text: JSON.stringify(structured) }],
    ...(settlement ? { _meta: { [MCP_PAYMENT_RESPONSE_META]: settlement } } : {}),
  };
}
