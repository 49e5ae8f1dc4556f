/**
 * The stages of a request, in order. A route's pipeline is the stages that take part in a route so
 * declared (decided once, at registration); each hands the request on or answers it. The last stage
 * each request reaches answers it: a payer's 402, a replayed payment-identifier, a paid write, a paid
 * read, a keyed call, or `handle`.
 *
 *   authenticate        who is asking: a bearer key, the wallet's signature (sign-in-with-x), or an x402 payer
 *   payment-challenge   a payer without a proof: 402 with the route's requirements
 *   payment-identifier  x402 v2's payment-identifier: the first answer of the same id again, never a second charge
 *   authorize-payment   the proof verified and locked, the payer's treasury resolved (nothing charged yet)
 *   paid-write          Idempotency-Key, reserve, settle, execute, record: charged exactly once
 *   paid-read           execute, then settle: a refusal is never charged
 *   idempotency         an unpaid Idempotency-Key: replay, or reserve, execute and record once
 *   handle              reserve, execute, answer
 *
 * Validation (validate.ts) is not a stage of its own: the request's input is parsed where a stage first
 * needs it, which keeps the x402 order (a 402 before a 400; a paid write's key claimed before its body is
 * judged). Before any stage, app.ts's middleware has counted the request (rate limits) and read its JSON body.
 */
import type { Request, Response } from "express";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import { authenticate } from "./authenticate";
import { authorizePayment } from "./authorize-payment";
import { handle } from "./handle";
import { idempotency } from "./idempotency";
import { paidRead } from "./paid-read";
import { paidWrite } from "./paid-write";
import { paymentChallenge } from "./payment-challenge";
import { paymentIdentifier } from "./payment-identifier";
import { requestState, type RequestStage } from "./stage";

export const REQUEST_STAGES: readonly RequestStage[] = [
  authenticate,
  paymentChallenge,
  paymentIdentifier,
  authorizePayment,
  paidWrite,
  paidRead,
  idempotency,
  handle,
];

/** the stages a route so declared goes through */
export const stagesOf = (spec: AnyRouteSpec): readonly RequestStage[] => REQUEST_STAGES.filter((s) => s.takesPart(spec));

const DONE: Promise<void> = Promise.resolve();

/**
 * A route's request handler: its stages, run in order. A stage's own promise is the step's (no wrapper per
 * stage); a stage that throws instead of rejecting rejects the request's promise all the same.
 */
export function requestPipeline(spec: AnyRouteSpec, hooks: RouteHooks) {
  const stages = stagesOf(spec);
  return (req: Request, res: Response): Promise<void> => {
    const state = requestState(req, res, spec, hooks);
    const at = (i: number): Promise<void> => {
      const stage = stages[i];
      if (!stage) return DONE;
      try {
        return stage.run(state, () => at(i + 1));
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return at(0);
  };
}
