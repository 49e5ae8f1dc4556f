/**
 * x402 on a route without an Idempotency-Key (a read): run the handler while the payment's lease is kept,
 * then settle. A refusal or a failure is never charged: its proof is released.
 */
import { whileLeased } from "../../services/idempotency";
import { sendJson } from "../json-response";
import type { HandlerResult } from "../route-spec";
import { settledResult } from "./respond";
import { takesPayment, type RequestStage } from "./stage";
import { handlerContext } from "./validate";

export const paidRead: RequestStage = {
  name: "paid-read",
  takesPart: (spec) => takesPayment(spec) && !spec.idempotencyKey,
  errors: () => ["payment_settlement_unknown"],
  async run({ req, res, spec, payment: claim }, next) {
    if (!claim) return next();
    let result: HandlerResult;
    try {
      result = settledResult(
        await whileLeased(
          () => claim.renew(),
          async () => spec.handler(handlerContext(spec, req, res)),
        ),
      );
    } catch (err) {
      await claim.release();
      throw err;
    }
    if (result.status >= 400) {
      await claim.release();
      sendJson(res, result.status, result.body);
      return;
    }
    if (!(await claim.settle())) return;
    for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
    await claim.outcome(result.status);
    sendJson(res, result.status, result.body);
  },
};
