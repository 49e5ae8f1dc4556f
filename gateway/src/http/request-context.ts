/**
 * Request id (echoed in X-Request-Id and every error body) and the
 * structured access log (pino-http), one JSON line per request.
 */
import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { pinoHttp } from "pino-http";
import { scrubLogObject } from "./log-scrub";

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.header("x-request-id");
  const id = incoming && INCOMING_ID.test(incoming) ? incoming : `req_${randomUUID().replace(/-/g, "")}`;
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  next();
};

export function accessLog(logger: Logger, secrets: readonly string[] = []): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (_req, res) => (res as unknown as { locals: { requestId: string } }).locals.requestId,
    customProps: (_req, res) => ({ request_id: (res as unknown as { locals: { requestId: string } }).locals.requestId }),
    // credentials are masked by the logger's scrubber (log-scrub.ts), whatever header or parameter carries them
    serializers: {
      req: (req: { method: string; url: string; headers: Record<string, unknown> }) => scrubLogObject({ method: req.method, url: req.url, headers: req.headers }, secrets),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? "error" : "info"),
  }) as unknown as RequestHandler;
}
