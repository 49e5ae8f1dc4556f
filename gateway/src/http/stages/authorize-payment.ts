/**
 * The payer's proof authorized (x402/authorize.ts): matched to this route's requirements, verified and
 * locked, the payer's treasury resolved; nothing is charged yet. The gate's outcome is written here: a
 * refused proof is answered 402 and goes no further; a claimed one gives the request its credential and
 * `X-Treasury-Id`, and is the request's payment, which the next stage settles or releases (its settlement's
 * headers, or its refusal's 402, written here too).
 */
import type { PaymentClaim, PaymentGate } from "../../x402/payment-gate";
import { paidRoute, takesPayment, writeAnswer, type PaidClaim, type RequestStage, type RequestState } from "./stage";

/** the credential a payment gave the request, gone with it */
export function forgetPayment(state: Pick<RequestState, "res">): void {
  state.res.locals.credential = undefined;
  state.res.removeHeader("X-Treasury-Id");
}

/** the gate's claim as the paid stages use it: its settlement's headers or its 402 written on the response */
function paidClaim(state: RequestState, gate: PaymentGate, claim: PaymentClaim): PaidClaim {
  const { res } = state;
  return {
    payer: claim.payer,
    nonce: claim.nonce,
    treasuryId: claim.treasuryId,
    release: () => claim.release(),
    outcome: (status) => claim.outcome(status),
    renew: () => claim.renew(),
    async settle(used, answered) {
      let settled;
      try {
        settled = await claim.settle(used, answered);
      } catch (err) {
        forgetPayment(state); // an unknown settlement: the retry with the same proof is served
        throw err;
      }
      if (settled.kind === "settled") {
        for (const [name, value] of Object.entries(settled.headers)) res.setHeader(name, value);
        return true;
      }
      forgetPayment(state);
      writeAnswer(res, gate.refusal(paidRoute(state.spec), settled.refusal, state.sentPayment?.scheme));
      return false;
    },
  };
}

/** the request's proof authorized: its claim (the credential set), or undefined when its 402 was written */
export async function authorizeRequest(state: RequestState): Promise<PaidClaim | undefined> {
  const gate = state.hooks.payments!;
  const outcome = await gate.authorize(state.sentPayment, paidRoute(state.spec));
  if (outcome.kind === "refused") return void writeAnswer(state.res, outcome);
  state.res.locals.credential = outcome.credential;
  state.res.setHeader("X-Treasury-Id", outcome.treasuryId);
  return paidClaim(state, gate, outcome.claim);
}

export const authorizePayment: RequestStage = {
  name: "authorize-payment",
  takesPart: takesPayment,
  errors: () => ["payment_facilitator_unavailable", "payment_in_progress"],
  async run(state, next) {
    if (!state.paying) return next();
    const claim = await authorizeRequest(state);
    if (!claim) return;
    state.payment = claim;
    return next();
  },
};
