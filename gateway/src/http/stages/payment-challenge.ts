/**
 * The x402 challenge: a payer's request without a proof is answered 402 with the route's requirements
 * (x402 v1 body, v2 PAYMENT-REQUIRED header: the gate's answer, x402/challenge.ts, written here; a browser
 * gets x402's paywall page) and their signed offers (x402's
 * offer-receipt extension); on a `siwx` route the 402 also offers sign-in-with-x, bound to this request. A
 * request with a proof goes on, its route's signed offers ready for any 402 the payment stages answer it with.
 */
import { SIWX_EXTENSION_KEY } from "../../x402/sign-in-with-x";
import { paidRoute, takesPayment, writeAnswer, type RequestStage } from "./stage";

/** a browser's request (x402's paywall page is its 402, as x402-express decides) */
const isBrowser = (accept: string | undefined, userAgent: string | undefined) => (accept ?? "").includes("text/html") && (userAgent ?? "").includes("Mozilla");

export const paymentChallenge: RequestStage = {
  name: "payment-challenge",
  takesPart: takesPayment,
  errors: () => [],
  async run({ req, res, spec, hooks, paying, sentPayment }, next) {
    if (!paying) return next();
    const route = paidRoute(spec);
    if (sentPayment) {
      await hooks.receipts?.offerOnRefusal(req, res, route);
      return next();
    }
    const siwx = spec.siwx && hooks.walletSignature ? { [SIWX_EXTENSION_KEY]: hooks.walletSignature.challenge(req) } : {};
    const offers = hooks.receipts ? await hooks.receipts.offersFor(req, route) : {};
    const answer = hooks.payments!.challenge(route, { ...siwx, ...offers });
    if (!isBrowser(req.header("accept"), req.header("user-agent"))) return writeAnswer(res, answer);
    for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
    res.status(402).send(answer.paywall(req.originalUrl));
  },
};
