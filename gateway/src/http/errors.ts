/**
 * Typed errors (spec 2.1 and 7) over HTTP. Everything that leaves the service
 * as a non-2xx answer is a TreasuryError (packages/core/src/lib/errors.ts: a closed set of codes)
 * turned into `{ error, message, request_id, ... }` with its code's status.
 */
import type { ErrorRequestHandler, RequestHandler } from "express";
import { TreasuryError, type ErrorCode } from "@treasury/core/lib/errors";
import type { ZodError } from "zod";
import { sendJson } from "./json-response";

/** the HTTP status of every error code: the one place a code meets HTTP (MCP carries the same status as `http_status`) */
export const HTTP_STATUS = {
  invalid_request: 400,
  invalid_payment_identifier: 400,
  invalid_signed_transaction: 400,
  chain_id_mismatch: 400,
  to_mismatch: 400,
  data_mismatch: 400,
  value_mismatch: 400,
  signer_mismatch: 400,
  invalid_ownership_proof: 400,
  invalid_safe_proof: 400,
  invalid_module: 400,
  insufficient_balance: 400,
  insufficient_collateral: 400,
  insufficient_debt: 400,
  no_debt: 400,
  webhook_url_refused: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  method_not_allowed: 405,
  unauthorized: 401,
  owner_removed: 401,
  key_not_bound: 403,
  host_not_allowed: 403,
  origin_not_allowed: 403,
  not_an_owner: 403,
  ownership_not_proven: 403,
  ltv_limit_exceeded: 403,
  not_found: 404,
  treasury_not_found: 404,
  access_request_not_found: 404,
  envelope_not_found: 404,
  tool_not_found: 404,
  envelope_expired: 410,
  conflicting_operation: 409,
  invalid_transition: 409,
  not_managed: 409,
  already_relayed: 409,
  nonce_not_next: 409,
  step_in_flight: 409,
  step_out_of_order: 409,
  prerequisite_steps_required: 409,
  idempotency_in_progress: 409,
  idempotency_key_reused: 422,
  payment_in_progress: 409,
  payment_identifier_reused: 409,
  safe_transaction_not_open: 409,
  safe_nonce_used: 409,
  transaction_would_revert: 422,
  borrow_refused: 422,
  would_be_liquidatable: 422,
  transaction_reverted: 422,
  broadcast_rejected: 422,
  sandbox_execution_failed: 422,
  rate_limited: 429,
  gas_budget_exhausted: 429,
  chain_unavailable: 503,
  sandbox_unavailable: 503,
  payment_facilitator_unavailable: 503,
  payment_settlement_unknown: 503,
  automation_unconfigured: 503,
  internal_error: 500,
} as const satisfies Record<ErrorCode, number>;

export const statusOf = (err: TreasuryError): number => HTTP_STATUS[err.code];

export const badRequest = (message: string, fields: Record<string, unknown> = {}) => new TreasuryError("invalid_request", message, fields);

export function fromZodError(error: ZodError, where: "body" | "query" | "path" | "header", input?: unknown): TreasuryError {
  const details = error.issues.map((i) => ({
    location: where,
    field: i.path.map(String).join(".") || null,
    // a field that is not there is "required", not an invalid value of it
    message:
      i.path.length > 0 && valueAt(input, i.path) === undefined
        ? `required: ${i.message.replace(/^Invalid (option|input): /, "").replace(/, received undefined$/, "")}`
        : i.message,
  }));
  const first = details[0];
  const message = first ? `${where}${first.field ? ` field '${first.field}'` : ""}: ${first.message}` : `invalid ${where}`;
  return new TreasuryError("invalid_request", message, { details });
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

export function errorBody(err: TreasuryError, requestId: string | undefined) {
  return { error: err.code, message: err.shortMessage, request_id: requestId, ...err.fields };
}

export function sendError(res: Parameters<RequestHandler>[1], err: TreasuryError): void {
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  sendJson(res, statusOf(err), errorBody(err, res.locals.requestId as string | undefined));
}

/** body-parser errors carry `type` and `status`; map them to typed errors */
function fromBodyParser(err: { type?: string; status?: number; message?: string }): TreasuryError | undefined {
  switch (err.type) {
    case "entity.parse.failed":
      return new TreasuryError("invalid_request", "malformed JSON body");
    case "entity.too.large":
      return new TreasuryError("payload_too_large", "request body is larger than the limit");
    case "encoding.unsupported":
    case "charset.unsupported":
      return new TreasuryError("unsupported_media_type", err.message ?? "unsupported body encoding");
    case "request.aborted":
      return new TreasuryError("invalid_request", "request aborted");
    case "request.size.invalid":
    case "stream.encoding.set":
    case "stream.not.readable":
      return new TreasuryError("invalid_request", "unreadable request body");
    default:
      if (typeof err.status === "number" && err.status >= 400 && err.status < 500) {
        return new TreasuryError(
          err.status === 413 ? "payload_too_large" : err.status === 415 ? "unsupported_media_type" : "invalid_request",
          err.message ?? "bad request",
        );
      }
      return undefined;
  }
}

export const notFoundHandler: RequestHandler = (req, res) => {
  sendError(
    res,
    new TreasuryError("not_found", `no route for ${req.method} ${req.path}: every route is listed at /docs (the API reference) and /openapi.json`),
  );
};

export function errorHandler(log: { error: (obj: unknown, msg: string) => void }): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    const typed = err instanceof TreasuryError ? err : fromBodyParser(err as { type?: string; status?: number; message?: string });
    if (typed) {
      sendError(res, typed);
      return;
    }
    log.error({ err, request_id: res.locals.requestId }, "unhandled error");
    if (res.headersSent) return;
    sendError(res, new TreasuryError("internal_error", "internal error; quote the request_id when reporting it"));
  };
}
