/**
 * The answer: a handler's result as JSON with its headers, or an outcome (a result, or a typed 4xx, as the
 * text an Idempotency-Key stores and replays byte for byte) with `Idempotent-Replayed`.
 */
import type { Response } from "express";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Outcome } from "../../services/idempotency";
import { errorBody, statusOf } from "../errors";
import { jsonTextOf, sendJson, sendJsonText } from "../json-response";
import type { HandlerResult } from "../route-spec";

export const IDEMPOTENCY_REPLAY_HEADER = "Idempotent-Replayed";

/** a body that is still a promise is a handler that forgot an await: fail loudly, never serialize it as {} */
export function settledResult(result: HandlerResult): HandlerResult {
  if (result.body instanceof Promise) throw new Error("handler returned an unsettled promise as its body (a missing await)");
  return result;
}

/** the typed outcome of a handler: its result, or its typed 4xx as a response (5xx and the unexpected rethrow) */
export async function outcomeOf(res: Response, run: () => Promise<HandlerResult>): Promise<Outcome> {
  try {
    const result = settledResult(await run());
    return { status: result.status, headers: result.headers ?? {}, body: jsonTextOf(result.body) };
  } catch (err) {
    if (err instanceof TreasuryError && statusOf(err) < 500) {
      return { status: statusOf(err), headers: err.headers, body: JSON.stringify(errorBody(err, res.locals.requestId as string | undefined)) };
    }
    throw err;
  }
}

/** an outcome, first served or replayed */
export function sendOutcome(res: Response, outcome: Outcome, replayed: boolean): void {
  for (const [k, v] of Object.entries(outcome.headers)) res.setHeader(k, v);
  res.setHeader(IDEMPOTENCY_REPLAY_HEADER, replayed ? "true" : "false");
  sendJsonText(res, outcome.status, outcome.body);
}

/** a handler's result: its headers, then its body as JSON */
export function sendResult(res: Response, result: HandlerResult): void {
  for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
  sendJson(res, result.status, result.body);
}

/** a result that is a stream: its headers, then the stream, written until it ends */
export async function streamResult(res: Response, result: HandlerResult): Promise<void> {
  for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
  res.status(result.status);
  await result.stream!(res);
}
