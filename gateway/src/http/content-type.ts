/**
 * Request bodies: a request that carries one must say it is JSON (anything
 * else is 415; a body-less POST, such as POST /api/v1/sandbox/keys, needs no
 * header), is parsed (the common request by `readPlainJson` below, any other
 * by body-parser's JSON parser), and is refused when nested too deep.
 * `jsonBody` runs the three as one middleware, and none of them for a request
 * without a body (a GET): one check instead of three passes.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RequestHandler, Response } from "express";
import { TreasuryError } from "@treasury/core/lib/errors";

/** body-parser's own test for a body (type-is's hasBody): a Transfer-Encoding, or a Content-Length that is a number */
const carriesBody = (headers: { "transfer-encoding"?: string; "content-length"?: string }): boolean =>
  headers["transfer-encoding"] !== undefined || !isNaN(headers["content-length"] as unknown as number);

/** the first character after JSON's blanks (space, tab, LF, CR), as body-parser's strict parser looks at it */
function firstNonBlank(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return text[i];
  }
  return undefined;
}

/** a body-parser error (`type`, `status`): the error handler maps each to its typed answer, whichever reader raised it */
const bodyError = (type: string, status: number, message: string) => Object.assign(new Error(message), { type, status, expose: true });

/** the Content-Type of nearly every JSON request, charset UTF-8 or none */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*("?)utf-8\1\s*)?$/i;

/**
 * The common request read here: `application/json` (charset UTF-8 or none), no Content-Encoding, a
 * Content-Length within the limit. Read whole, decoded as UTF-8 and parsed as body-parser's strict JSON
 * parser does (an empty body is {}; anything but an object or array is malformed), with its error types.
 * Anything else (another charset, a compressed or chunked body, a length over the limit) goes to
 * `fallback` (express.json), which answers it as before. body-parser's stream reading and decoding (raw-body,
 * iconv-lite) was 11% of a preview's CPU in the bench's profile. The bytes as received stay in
 * `res.locals.rawBody` (a paid answer's receipt binds their digest; `keepRawBody` does the same for the fallback).
 */
function readPlainJson(limitBytes: number, fallback: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const type = req.headers["content-type"];
    const encoding = req.headers["content-encoding"];
    const length = Number(req.headers["content-length"]);
    if (
      !type ||
      !PLAIN_JSON.test(type) ||
      (encoding !== undefined && encoding.toLowerCase() !== "identity") ||
      req.headers["transfer-encoding"] !== undefined ||
      !Number.isSafeInteger(length) ||
      length > limitBytes
    ) {
      return fallback(req, res, next);
    }
    (req as { _body?: boolean })._body = true;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    // the listeners stay: the request is done with when its body is, and a late event finds it settled
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      next(err);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > length) {
        req.pause();
        finish(bodyError("request.size.invalid", 400, "request size did not match content length"));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      if (received !== length) return finish(bodyError("request.size.invalid", 400, "request size did not match content length"));
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      res.locals.rawBody = raw;
      // a UTF-8 byte order mark is dropped, as body-parser's decoder drops it
      const decoded = raw.toString("utf8");
      const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
      if (text.length === 0) {
        req.body = {};
        return finish();
      }
      const first = firstNonBlank(text);
      if (first !== "{" && first !== "[")
        return finish(bodyError("entity.parse.failed", 400, "Unexpected token in JSON: only an object or an array is accepted"));
      try {
        req.body = JSON.parse(text);
      } catch (err) {
        return finish(bodyError("entity.parse.failed", 400, (err as Error).message));
      }
      finish();
    };
    const onAborted = () => finish(bodyError("request.aborted", 400, "request aborted"));
    const onError = (err: Error) => finish(bodyError("request.aborted", 400, err.message));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("aborted", onAborted);
    req.on("error", onError);
  };
}

/** express.json's `verify`: the request's content bytes (decompressed, before decoding) kept in `res.locals.rawBody`, as `readPlainJson` keeps them */
export const keepRawBody = (_req: IncomingMessage, res: ServerResponse, buf: Buffer): void => {
  (res as Response).locals.rawBody = buf;
};

/** the body stage: content type, then the JSON body (read here, or by `fallback`: express.json), then the depth limit; a request without a body passes at once */
export function jsonBody(opts: { limitBytes: number; fallback: RequestHandler }): RequestHandler {
  const parse = readPlainJson(opts.limitBytes, opts.fallback);
  return (req, res, next) => {
    if (!carriesBody(req.headers)) {
      req.body ??= {}; // as the parser leaves it
      return next();
    }
    const parsed = (parseErr?: unknown) => (parseErr ? next(parseErr) : limitJsonDepth(req, res, next));
    // the common type needs no media-type parsing to be accepted (type-is's parse was 5-8% of a request)
    const type = req.headers["content-type"];
    if (type !== undefined && PLAIN_JSON.test(type)) return parse(req, res, parsed);
    requireJsonBody(req, res, (err?: unknown) => (err ? next(err) : parse(req, res, parsed)));
  };
}

export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const length = req.headers["content-length"];
  const hasBody = (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
  if (!hasBody) return next();
  if (!req.is(["application/json", "application/*+json"])) {
    return next(
      new TreasuryError("unsupported_media_type", `request bodies must be application/json, got ${req.headers["content-type"] ?? "no content type"}`),
    );
  }
  next();
};

/** deeper JSON than any request of this API needs; refused before anything walks it (no recursion, no stack overflow) */
export const MAX_JSON_DEPTH = 16;

/** the nesting depth of a parsed JSON value, iteratively, stopping early past `limit` */
export function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return true;
    for (const child of Object.values(v as object)) stack.push([child, depth + 1]);
  }
  return false;
}

export const limitJsonDepth: RequestHandler = (req, _res, next) => {
  if ((req as { _body?: boolean })._body === true && jsonDepthExceeds(req.body, MAX_JSON_DEPTH)) {
    return next(new TreasuryError("invalid_request", `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`));
  }
  next();
};
