/**
 * x402 on a route without an Idempotency-Key (a read): run the handler while the payment's lease is kept,
 * then settle. A refusal or a failure is never charged: its proof is released. The paid answer's settlement
 * header carries the receipt signed for this request and these exact answer bytes (x402/receipts/).
 */
import { whileLeased } from "../../services/idempotency";
import { meteredAmount } from "../../x402/prices";
import { jsonTextOf, sendJson, sendJsonText } from "../json-response";
import type { HandlerResult } from "../route-spec";
import { settledResult, streamResult } from "./respond";
import { paidRoute, takesPayment, type RequestStage } from "./stage";
import { handlerContext } from "./validate";

export const paidRead: RequestStage = {
  name: "paid-read",
  takesPart: (spec) => takesPayment(spec) && !spec.idempotencyKey,
  errors: () => ["payment_settlement_unknown"],
  async run({ req, res, spec, hooks, payment: claim }, next) {
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
    // a metered route charges what its answer used (an `upto` payment; any other pays the route's price); the
    // answer's status goes with the charge (a session voucher records both in one transaction)
    if (!(await claim.settle(spec.price?.meter ? meteredAmount(spec.price, result.body) : undefined, result.status))) return;
    for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
    await claim.outcome(result.status);
    // a paid stream: settled (its settlement header is set) before its first byte; no answer bytes to sign a receipt over
    if (result.stream) return streamResult(res, result);
    const text = jsonTextOf(result.body);
    await hooks.receipts?.signHttpAnswer(req, res, paidRoute(spec), claim.payer, text);
    sendJsonText(res, result.status, text);
  },
};
