/**
 * Request bodies: a request that carries one must say it is JSON (anything
 * else is 415; a body-less POST, such as POST /api/v1/sandbox/keys, needs no
 * header), is parsed by body-parser's JSON parser, and is refused when nested
 * too deep. `jsonBody` runs the three as one middleware, and none of them for
 * a request without a body (a GET): one check instead of three passes.
 */
import type { RequestHandler } from "express";
import { ApiError } from "./errors";

/** body-parser's own test for a body (type-is's hasBody): a Transfer-Encoding, or a Content-Length that is a number */
const carriesBody = (headers: { "transfer-encoding"?: string; "content-length"?: string }): boolean =>
  headers["transfer-encoding"] !== undefined || !isNaN(headers["content-length"] as unknown as number);

/** the body stage: content type, then `parse` (express.json), then the depth limit; a request without a body passes at once */
export function jsonBody(parse: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (!carriesBody(req.headers)) {
      req.body ??= {}; // as the parser leaves it
      return next();
    }
    requireJsonBody(req, res, (err?: unknown) => {
      if (err) return next(err);
      parse(req, res, (parseErr?: unknown) => (parseErr ? next(parseErr) : limitJsonDepth(req, res, next)));
    });
  };
}

export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const length = req.headers["content-length"];
  const hasBody = (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
  if (!hasBody) return next();
  if (!req.is(["application/json", "application/*+json"])) {
    return next(new ApiError("unsupported_media_type", `request bodies must be application/json, got ${req.headers["content-type"] ?? "no content type"}`));
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
    return next(new ApiError("invalid_request", `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`));
  }
  next();
};
