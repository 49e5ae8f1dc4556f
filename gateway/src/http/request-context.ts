/**
 * Request id (echoed in X-Request-Id and every error body) and the
 * structured access log, one JSON line per request.
 */
import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { AccessLog } from "./access-log";

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * The request's id (X-Request-Id: a well-formed incoming one is kept, else a fresh one; every error body
 * carries it) and its access-log line: one middleware, one pass.
 *
 * One line per request when its answer is sent (or its connection closes first): the request id, method,
 * URL, status, time taken, client address and user agent; every field passes the logger's scrubber. The
 * request's headers are not logged: serializing and scrubbing them for every request was a tenth of a
 * public GET's time (bench/README.md), and a header is where a credential travels. The line is written by
 * `log` (`http/access-log.ts`), which scrubs the fields a caller chose.
 */
/** a fresh request id: `req_` and a random UUID's 32 hex digits */
const freshId = (): string => {
  const u = randomUUID();
  return `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(14, 18)}${u.slice(19, 23)}${u.slice(24)}`;
};

export function requestContext(log: AccessLog): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers["x-request-id"];
    const id = typeof incoming === "string" && INCOMING_ID.test(incoming) ? incoming : freshId();
    res.locals.requestId = id;
    res.setHeader("X-Request-Id", id);
    const started = process.hrtime.bigint();
    // a response emits close once, after finish when its answer was sent whole, alone when its connection went
    // first: a plain listener is enough (`once` would wrap it, per request)
    res.on("close", () => {
      log({
        requestId: id,
        method: req.method,
        url: req.originalUrl,
        remoteAddress: req.socket.remoteAddress,
        userAgent: req.headers["user-agent"],
        status: res.statusCode,
        responseTime: Number((Number(process.hrtime.bigint() - started) / 1e6).toFixed(3)),
        aborted: !res.writableFinished,
      });
    });
    next();
  };
}
