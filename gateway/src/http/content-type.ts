/**
 * A request that carries a body must say it is JSON: anything else is 415.
 * (A body-less POST, such as POST /api/v1/sandbox/keys, needs no header.)
 */
import type { RequestHandler } from "express";
import { ApiError } from "./errors";

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
