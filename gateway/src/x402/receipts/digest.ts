/**
 * The digests a receipt binds: what was asked and what was answered, each as SHA-256 in lowercase hex.
 *
 *   HTTP request   sha256(the request's content bytes, as received: identity coding, before any parsing;
 *                  a request without a body digests the empty string)  + METHOD (upper case) + path
 *                  (pathname and query as sent: Express's `req.originalUrl`)
 *   HTTP answer    sha256(the response's content bytes, exactly as sent)
 *   MCP request    sha256(RFC 8785 JSON of the tool's `arguments`) + the tool's name
 *   MCP answer     sha256(RFC 8785 JSON of the CallToolResult without `_meta`)
 *
 * An MCP message has no bytes of its own to digest (each side parses and re-serializes the JSON-RPC
 * frame), so its values are canonicalized: RFC 8785 (JCS), which for values that came out of JSON.parse is
 * lib/canonical-json.ts `canonicalJson` (keys sorted by UTF-16 code units, strings and numbers as ECMAScript
 * JSON.stringify writes them). `@x402/extensions`' own `canonicalize` differs from RFC 8785 on control
 * characters in strings (it writes "\n" as "\u000a"): a verifier must use an RFC 8785 implementation (or
 * `canonicalJson`), not that one, for these two digests. `_meta` is left out of the answer because it is where
 * the receipt itself travels (and MCP reserves it for metadata); everything else the client receives is in.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../../lib/canonical-json";

/** the name of the digest algorithm, as the receipt states it (IANA hash name) */
export const DIGEST_ALGORITHM = "sha-256";

const HEX_DIGEST = /^[0-9a-f]{64}$/;

/** a SHA-256 in lowercase hex */
export type Digest = string;

export const isDigest = (value: unknown): value is Digest => typeof value === "string" && HEX_DIGEST.test(value);

/** sha-256 of exact bytes (a string is taken as its UTF-8 bytes) */
export function sha256Hex(bytes: Uint8Array | string): Digest {
  return createHash("sha256")
    .update(typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes)
    .digest("hex");
}

/**
 * RFC 8785 JSON of a JSON value (what JSON.parse gives). Anything JSON cannot carry is refused rather than
 * written as something else: a digest must mean one value.
 */
export function jcs(value: unknown): string {
  assertJsonValue(value, 0);
  return canonicalJson(value);
}

function assertJsonValue(value: unknown, depth: number): void {
  if (depth > 64) throw new TypeError("the value is nested too deep to canonicalize");
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("a JSON number must be finite");
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) assertJsonValue(v, depth + 1);
    return;
  }
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) assertJsonValue(v, depth + 1);
    return;
  }
  throw new TypeError(`a ${typeof value} is not a JSON value`);
}

/** an HTTP request, as the receipt binds it */
export interface HttpRequestFacts {
  method: string;
  /** pathname and query, as sent (`req.originalUrl`) */
  path: string;
  /** the request's content bytes (empty when none) */
  body: Uint8Array | string;
}

/** an MCP tool call, as the receipt binds it */
export interface ToolCallFacts {
  tool: string;
  /** the call's `params.arguments` (a JSON object; absent is `{}`) */
  arguments: unknown;
}

export type HttpRequestBinding = { transport: "http"; method: string; path: string; body: Digest };
export type ToolCallBinding = { transport: "mcp"; tool: string; arguments: Digest };
export type RequestBinding = HttpRequestBinding | ToolCallBinding;

export function httpRequestBinding(req: HttpRequestFacts): HttpRequestBinding {
  if (!/^[A-Za-z]+$/.test(req.method)) throw new TypeError("an HTTP method is letters only");
  if (!req.path.startsWith("/")) throw new TypeError("the request path must start with / (pathname and query, as sent)");
  return { transport: "http", method: req.method.toUpperCase(), path: req.path, body: sha256Hex(req.body) };
}

export function toolCallBinding(call: ToolCallFacts): ToolCallBinding {
  if (call.tool === "") throw new TypeError("a tool call names its tool");
  return { transport: "mcp", tool: call.tool, arguments: sha256Hex(jcs(call.arguments ?? {})) };
}

/** the digest of an HTTP answer: its content bytes, exactly as sent */
export const httpAnswerDigest = (body: Uint8Array | string): Digest => sha256Hex(body);

/** the digest of an MCP tool result: RFC 8785 JSON of everything but `_meta` */
export function toolResultDigest(result: Record<string, unknown>): Digest {
  const { _meta: _ignored, ...answer } = result;
  return sha256Hex(jcs(answer));
}
