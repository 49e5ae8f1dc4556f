/**
 * Typed errors (spec 2.1 and 7). Everything that leaves the service as a
 * non-2xx answer is an ApiError turned into `{ error, message, request_id, ... }`.
 */
import type { ErrorRequestHandler, RequestHandler } from "express";
import type { ZodError } from "zod";

export type ErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "forbidden"
  | "ltv_limit_exceeded"
  | "not_found"
  | "treasury_not_found"
  | "access_request_not_found"
  | "method_not_allowed"
  | "conflict"
  | "invalid_transition"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "sandbox_unavailable"
  | "not_implemented"
  | "internal_error"
  | (string & {});

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** contextual fields added to the body (e.g. safe_amount) */
    readonly fields: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, fields: Record<string, unknown> = {}) => new ApiError(400, "invalid_request", message, fields);

export function fromZodError(error: ZodError, where: "body" | "query" | "path" | "header"): ApiError {
  const details = error.issues.map((i) => ({
    location: where,
    field: i.path.map(String).join(".") || null,
    message: i.message,
  }));
  const first = details[0];
  const message = first
    ? `${where}${first.field ? ` field '${first.field}'` : ""}: ${first.message}`
    : `invalid ${where}`;
  return new ApiError(400, "invalid_request", message, { details });
}

export function errorBody(err: ApiError, requestId: string | undefined) {
  return { error: err.code, message: err.message, request_id: requestId, ...err.fields };
}

export function sendError(res: Parameters<RequestHandler>[1], err: ApiError): void {
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res.status(err.status).json(errorBody(err, res.locals.requestId as string | undefined));
}

/** body-parser errors carry `type` and `status`; map them to typed errors */
function fromBodyParser(err: { type?: string; status?: number; message?: string }): ApiError | undefined {
  switch (err.type) {
    case "entity.parse.failed":
      return new ApiError(400, "invalid_request", "malformed JSON body");
    case "entity.too.large":
      return new ApiError(413, "payload_too_large", "request body is larger than the limit");
    case "encoding.unsupported":
    case "charset.unsupported":
      return new ApiError(415, "unsupported_media_type", err.message ?? "unsupported body encoding");
    case "request.aborted":
      return new ApiError(400, "invalid_request", "request aborted");
    case "request.size.invalid":
    case "stream.encoding.set":
    case "stream.not.readable":
      return new ApiError(400, "invalid_request", "unreadable request body");
    default:
      if (typeof err.status === "number" && err.status >= 400 && err.status < 500) {
        return new ApiError(err.status, "invalid_request", err.message ?? "bad request");
      }
      return undefined;
  }
}

export const notFoundHandler: RequestHandler = (req, res) => {
  sendError(res, new ApiError(404, "not_found", `no route for ${req.method} ${req.path}`));
};

export function errorHandler(log: { error: (obj: unknown, msg: string) => void }): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    const apiError =
      err instanceof ApiError ? err : fromBodyParser(err as { type?: string; status?: number; message?: string });
    if (apiError) {
      sendError(res, apiError);
      return;
    }
    log.error({ err, request_id: res.locals.requestId }, "unhandled error");
    if (res.headersSent) return;
    sendError(res, new ApiError(500, "internal_error", "internal error; quote the request_id when reporting it"));
  };
}
