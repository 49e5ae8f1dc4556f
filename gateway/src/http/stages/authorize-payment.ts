/**
 * The payer's proof authorized (x402/authorize.ts): decoded, matched to this route's requirements,
 * verified by the facilitator and locked, the payer's treasury resolved; nothing is charged yet. A refused
 * proof is answered 402 there and goes no further; an accepted one is the request's payment, which the
 * next stage settles or releases.
 */
import { paidRoute, takesPayment, type RequestStage } from "./stage";

export const authorizePayment: RequestStage = {
  name: "authorize-payment",
  takesPart: takesPayment,
  errors: () => ["payment_facilitator_unavailable", "payment_in_progress"],
  async run(state, next) {
    if (!state.paying) return next();
    const claim = await state.hooks.payments!.authorize(state.req, state.res, paidRoute(state.spec));
    if (!claim) return;
    state.payment = claim;
    return next();
  },
};
