/**
 * Authentication, on a route that takes a credential: who is asking. An Authorization header decides (a
 * valid key wins over a payment, an invalid one is 401). Without one: the wallet's own signature
 * (sign-in-with-x) on a route that declares `siwx`; else, on a route that takes x402 while x402 is on, the
 * request is a payer's and the payment stages serve it; else (x402 off) a `siwx` route still asks for the
 * wallet's signature, and any other asks for the key.
 */
import type { ErrorCode } from "@treasury/core/lib/errors";
import { hasWalletSignature } from "../../services/wallet-signature";
import type { RequestStage } from "./stage";

/** the bearer authenticator's refusals (services/authenticator.ts; a console session's owner is confirmed on its Safe's chain) */
const BEARER_ERRORS: readonly ErrorCode[] = ["unauthorized", "owner_removed", "key_not_bound", "chain_unavailable"];

export const authenticate: RequestStage = {
  name: "authenticate",
  takesPart: (spec) => spec.security === "bearer" || spec.security === "bearer_or_x402",
  errors: () => BEARER_ERRORS,
  async run(state, next) {
    const { req, res, spec, hooks } = state;
    if (!hooks.authenticate) throw new Error(`${spec.path} needs an authenticator`);
    const bearer = req.header("authorization");
    const signedIn = spec.siwx && !bearer && hooks.walletSignature && hasWalletSignature(req);
    if (signedIn) await hooks.walletSignature!.authenticate(req, res);
    else if (spec.security === "bearer_or_x402" && !bearer && hooks.payments?.enabled) state.paying = true;
    // x402 off: the way out still opens with the wallet's own signature
    else if (spec.siwx && hooks.walletSignature?.unauthorized && !bearer) throw hooks.walletSignature.unauthorized(req);
    else await hooks.authenticate(req, res);
    return next();
  },
};
