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
    return next(new ApiError(415, "unsupported_media_type", `request bodies must be application/json, got ${req.headers["content-type"] ?? "no content type"}`));
  }
  next();
};
