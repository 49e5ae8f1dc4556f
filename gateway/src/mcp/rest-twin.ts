/**
 * Every MCP tool call is served by the tool's REST route (its twin), in
 * process over the loopback: one implementation of every rule, with REST's
 * validation, authentication, idempotency, safety rail, typed errors and, for
 * a paid call, REST's x402 order (the proof matched to the route and price,
 * verified and locked, every check and the treasury's slot claimed before
 * settlement, settled once, executed; a refusal never charged).
 *
 * A call with a bearer key carries the key of the MCP request. A paid call
 * (the x402 MCP transport, version 2) carries `_meta["x402/payment"]` in the
 * header of its version (PAYMENT-SIGNATURE, or X-PAYMENT for a version 1
 * payload); its settlement comes back in `result._meta["x402/payment-response"]`
 * and a settlement that failed returns only the payment error. The settlement's
 * signed receipt (x402's offer-receipt extension) is the REST twin's, bound
 * again to the tool's name, the arguments as the client sent them and the tool
 * result (x402/receipts/paid-answers.ts).
 *
 * The loopback request carries this process's dispatch token and the MCP
 * client's address: the rate limiter counts a paid call under the verified
 * payer only (the MCP request itself was counted under its client, and a keyed
 * or public call's write was taken from the client's budget by the MCP
 * handler), and the free-credential limit counts the MCP client's address,
 * not the loopback's.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Request } from "express";
import { fromHeaderJson, PAYMENT_HEADERS, toHeaderJson } from "../x402/payment-match";
import type { ToolCallFacts } from "../x402/receipts/digest";
import type { PaidAnswers } from "../x402/receipts/paid-answers";

/** the MCP `_meta` keys of the x402 MCP transport */
export const MCP_PAYMENT_META = "x402/payment";
export const MCP_PAYMENT_RESPONSE_META = "x402/payment-response";
/** the wallet's own signature on a downward leg's tool: the SIGN-IN-WITH-X header's value (x402's sign-in-with-x) */
export const MCP_SIGN_IN_META = "sign-in-with-x";

export const INTERNAL_DISPATCH_HEADER = "x-treasury-internal-dispatch";
const CLIENT_ADDRESS_HEADER = "x-treasury-client-address";
const TOKEN = randomBytes(32).toString("hex");

/** was this request sent by this process's tool dispatch? */
export function isInternalDispatch(req: Request): boolean {
  const sent = req.header(INTERNAL_DISPATCH_HEADER);
  if (!sent || sent.length !== TOKEN.length) return false;
  return timingSafeEqual(Buffer.from(sent), Buffer.from(TOKEN));
}

/** the client's address: the request's own, or for a tool's loopback call the MCP client's it was made for */
export function clientAddress(req: Request): string {
  if (isInternalDispatch(req)) return req.header(CLIENT_ADDRESS_HEADER) ?? req.ip ?? "unknown";
  return req.ip ?? "unknown";
}

export interface RestCall {
  method: "GET" | "POST";
  /** the route's express path: its `:name` parameters are taken from `args` */
  path: string;
  /** the path parameters, then POST: the JSON body; GET: the query */
  args: Record<string, unknown>;
  idempotencyKey?: string;
}

/** the address the MCP request came in on: this process's own server */
function selfUrl(req: Request): string {
  const host = req.socket.localAddress ?? "127.0.0.1";
  return `http://${host.includes(":") ? `[${host}]` : host}:${req.socket.localPort}`;
}

function queryOf(args: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(args)) if (v !== undefined && v !== null) q.set(k, typeof v === "string" ? v : JSON.stringify(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

const asResult = (structured: Record<string, unknown>, isError: boolean, meta?: Record<string, unknown>): CallToolResult => ({
  ...(isError ? { isError: true } : {}),
  structuredContent: structured,
  content: [{ type: "text", text: JSON.stringify(structured) }],
  ...(meta ? { _meta: meta } : {}),
});

/** what an HTTP header's value may hold (RFC 9110 field-value: visible ASCII, space and tab) */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * Serve a tool call by its REST twin; answers the tool result: the route's
 * answer with its `http_status` (and `idempotent_replayed`), or a tool error
 * carrying the typed error body; for a paid call, the x402 MCP transport's
 * refusal (the PaymentRequired) or settlement.
 */
export async function callRestTwin(
  req: Request,
  call: RestCall,
  auth: { bearer?: string; payment?: unknown; signIn?: string },
  requestId: string,
  /** a paid call's receipt: the tool call as the client sent it */
  receipt?: { answers: PaidAnswers; call: ToolCallFacts },
): Promise<CallToolResult> {
  const paid = auth.payment !== undefined;
  const version = (auth.payment as { x402Version?: unknown } | null)?.x402Version === 1 ? 1 : 2;
  const headers: Record<string, string> = {
    [INTERNAL_DISPATCH_HEADER]: TOKEN,
    [CLIENT_ADDRESS_HEADER]: clientAddress(req),
    "x-request-id": requestId,
  };
  if (auth.bearer) headers.authorization = auth.bearer;
  if (paid) headers[PAYMENT_HEADERS[version].payment] = toHeaderJson(auth.payment ?? null);
  if (auth.signIn !== undefined) {
    // a value no HTTP header can carry (CR, LF, NUL, a character past ASCII) is no signed message: refused as the route refuses a malformed one
    if (!HEADER_VALUE.test(auth.signIn))
      throw new TreasuryError("unauthorized", "sign-in-with-x refused: malformed: not a header value (base64 of the signed message)");
    headers["sign-in-with-x"] = auth.signIn;
  }
  if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey;
  const post = call.method === "POST";
  if (post) headers["content-type"] = "application/json";
  const args = { ...call.args };
  const path = call.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const value = args[name];
    delete args[name];
    return encodeURIComponent(String(value ?? ""));
  });
  const res = await fetch(`${selfUrl(req)}${path}${post ? "" : queryOf(args)}`, {
    method: call.method,
    headers,
    body: post ? JSON.stringify(args) : undefined,
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { error: "internal_error", message: "the REST twin's answer was not JSON", request_id: requestId };
  }
  const body = (parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : { value: parsed }) as Record<string, unknown>;
  if (res.status === 402) {
    // the x402 MCP transport's refusal: the PaymentRequired object (v2), with the typed-error fields beside it
    const required = fromHeaderJson(res.headers.get(PAYMENT_HEADERS[2].required)) ?? {};
    const { x402Version: _v1, accepts: _a1, ...typed } = body;
    return asResult({ ...required, ...typed, error: body.error ?? required.error, http_status: 402 }, true);
  }
  if (res.status >= 400) return asResult({ ...body, http_status: res.status }, true);
  const settlement = paid ? fromHeaderJson(res.headers.get(PAYMENT_HEADERS[version].response)) : undefined;
  const replayed = res.headers.get("idempotent-replayed");
  const result = asResult({ ...body, http_status: res.status, ...(replayed === null ? {} : { idempotent_replayed: replayed === "true" }) }, false);
  if (!settlement) return result;
  const signed = receipt ? await receipt.answers.signToolCall(settlement, receipt.call, result as Record<string, unknown>) : settlement;
  return { ...result, _meta: { [MCP_PAYMENT_RESPONSE_META]: signed } };
}
