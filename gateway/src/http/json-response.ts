/**
 * A JSON answer written directly. Express's `res.json` / `res.send` set the
 * Content-Type and then parse it again to add the charset (the content-type
 * package's parse and format: 5-8% of a public GET's CPU in the bench's
 * profile); here the header is written once, already complete. As
 * `res.send` does, a HEAD request gets the headers (Content-Length included)
 * and no body. ETag is off for the app (app.ts), so nothing else is skipped.
 */
import type { Response } from "express";

const JSON_TYPE = "application/json; charset=utf-8";

/** an already serialized JSON body (a stored idempotent answer) */
export function sendJsonText(res: Response, status: number, text: string): void {
  // what was answered, for a caller that keeps it (the payment-identifier replay, route.ts)
  res.locals.sentJson = text;
  res.statusCode = status;
  res.setHeader("Content-Type", JSON_TYPE);
  res.setHeader("Content-Length", Buffer.byteLength(text));
  if (res.req.method === "HEAD") res.end();
  else res.end(text);
}

/**
 * A JSON answer already serialized: a route whose document changes only with a state it reads (the fee
 * schedule with the ratchet) keeps the text and answers it as is (its `JSON.stringify` was 11% of
 * `GET /fees.json` in the bench's profile).
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** the JSON text of a handler's answer body */
export const jsonTextOf = (body: unknown): string => (body instanceof JsonText ? body.text : (JSON.stringify(body) ?? ""));

export function sendJson(res: Response, status: number, body: unknown): void {
  sendJsonText(res, status, jsonTextOf(body));
}
