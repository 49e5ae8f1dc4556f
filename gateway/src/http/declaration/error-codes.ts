/**
 * The error codes an operation can answer with, per HTTP status, derived from its declaration: those of
 * the middleware every request meets (app.ts: the rate limits, the JSON body), those of validation and
 * of each request stage on the route's way (http/stages/pipeline.ts), and the route's own (`errors`: what
 * its services throw). Its OpenAPI operation lists them under each documented status (`x-error-codes`).
 */
import { ERROR_CODES, type ErrorCode } from "@treasury/core/lib/errors";
import { HTTP_STATUS } from "../errors";
import type { AnyRouteSpec } from "../route-spec";
import { stagesOf } from "../stages/pipeline";
import { validationErrors } from "../stages/validate";

/** the codes of app.ts's middleware, before any stage: every request is counted; a body is read as JSON */
const edgeErrors = (spec: AnyRouteSpec): readonly ErrorCode[] => [
  "rate_limited",
  ...(spec.request?.body ? (["invalid_request", "payload_too_large", "unsupported_media_type"] as const) : []),
];

/** every code an operation so declared can answer with, in the order of the code table */
export function errorCodesOf(spec: AnyRouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>([...edgeErrors(spec), ...validationErrors(spec), ...stagesOf(spec).flatMap((s) => s.errors(spec)), ...(spec.errors ?? [])]);
  return ERROR_CODES.filter((c) => codes.has(c));
}

/** the same codes, by HTTP status */
export function errorCodesByStatus(spec: AnyRouteSpec): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(spec)) byStatus.set(HTTP_STATUS[code], [...(byStatus.get(HTTP_STATUS[code]) ?? []), code]);
  return byStatus;
}
