/**
 * The x402 challenge: a payer's request without a proof is answered 402 with the route's requirements
 * (x402 v1 body, v2 PAYMENT-REQUIRED header, x402/challenge.ts) and their signed offers (x402's
 * offer-receipt extension); on a `siwx` route the 402 also offers sign-in-with-x, bound to this request. A
 * request with a proof goes on, its route's signed offers ready for any 402 the payment stages answer it with.
 */
import { hasPayment } from "../../x402/payment-gate";
import { SIWX_EXTENSION_KEY } from "../../x402/sign-in-with-x";
import { paidRoute, takesPayment, type RequestStage } from "./stage";

export const paymentChallenge: RequestStage = {
  name: "payment-challenge",
  takesPart: takesPayment,
  errors: () => [],
  async run({ req, res, spec, hooks, paying }, next) {
    if (!paying) return next();
    const route = paidRoute(spec);
    if (hasPayment(req)) {
      await hooks.receipts?.offerOnRefusal(req, res, route);
      return next();
    }
    const siwx = spec.siwx && hooks.walletSignature ? { [SIWX_EXTENSION_KEY]: hooks.walletSignature.challenge(req) } : {};
    const offers = hooks.receipts ? await hooks.receipts.offersFor(req, route) : {};
    await hooks.payments!.challenge(req, res, route, { ...siwx, ...offers });
  },
};
