/**
 * x402 `exact` (EIP-3009, versions 1 and 2): the proof matched to this route's own requirements (exact amount,
 * payTo, asset, network, an authorization no longer than maxTimeoutSeconds; payment-match.ts), verified by
 * the facilitator, locked as (payer, EIP-3009 nonce), settled once by the facilitator. It is the registry's
 * first scheme: a proof no scheme recognizes is read as `exact` and refused by its match.
 *
 * Valid now (the rate limit's identity): it matches this route, validAfter <= now < validBefore, its signature
 * is its `from`'s, and (payer, nonce) is in no row of x402_payments (a proof this service has seen is spent or
 * in use). The rows of settled payments are kept 7 days (store/retention.ts), far past any authorization's
 * validBefore (at most maxTimeoutSeconds + 30 s ahead), so a swept row's proof has expired by then.
 */
import { getAddress } from "viem";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { verifyPayment } from "../../facilitator-client";
import { decodePaymentHeader, decodePaymentV2, paymentMismatch, signedPayer, type DecodedPayment } from "../../payment-match";
import { reasonCode, settleByFacilitator, settlementHeaders, type FacilitatorSettling } from "../../settlement";
import { oneTurn, unseen } from "../proof-checks";
import type { PaymentScheme, RouteMatch, SchemeEnv } from "../scheme";

const routeOf = (env: SchemeEnv, at: RouteMatch) => ({
  priceAtomic: at.price.atomic,
  payTo: env.requirements.payTo,
  asset: getAddress(env.opts.asset.address),
  resource: env.ctx.links.url(at.route.path),
  maxTimeoutSeconds: env.ctx.config.x402.maxTimeoutSeconds,
  nowSeconds: at.nowSeconds,
});

export const exactScheme: PaymentScheme<DecodedPayment, FacilitatorSettling> = {
  name: "exact",
  recognizes: (sent) => sent.version === 1 || (sent.raw?.accepted as { scheme?: unknown } | undefined)?.scheme === "exact",
  decode: (sent) => (sent.version === 2 ? decodePaymentV2(sent.raw) : decodePaymentHeader(sent.header)),
  offers: (env, price) => [env.requirements.v2(price)],
  match: (env, proof, at) => paymentMismatch(proof, routeOf(env, at)),
  async verify(env, decoded, at, sent) {
    const { authorization } = decoded;
    // the facilitator gets the proof in the version it was made in, with this route's requirements in that version
    const payment = (decoded.version === 2 ? decoded.payment : { ...decoded.payment, x402Version: 1 }) as PaymentPayload;
    const requirements = (sent.version === 2 ? env.requirements.v2(at.price) : env.requirements.v1(at.route.path, at.price)) as PaymentRequirements;
    // the facilitator answered and refused the proof itself (malformed, say): the client's fault, a 402
    const verification = await verifyPayment(env.facilitator, payment, requirements);
    if (verification.refused) return { error: "invalid_payment", extra: { reason: reasonCode(verification.refused.reason) } };
    const verified = verification.verified;
    // an authorization used on chain may be this service's own payment, settled by a request that died before
    // answering: with a valid signature and this service's record of it, the lock decides (take over, or refuse)
    const ownDeadPayment =
      !verified.isValid &&
      /nonce_used/.test(verified.invalidReason ?? "") &&
      (await signedPayer(decoded, env.opts.asset))?.toLowerCase() === authorization.from.toLowerCase() &&
      (await env.ctx.stores.payments.seen(authorization.from, authorization.nonce));
    if (!verified.isValid && !ownDeadPayment) return { error: reasonCode(verified.invalidReason) ?? "invalid_payment", extra: { payer: verified.payer } };
    return { payer: getAddress(authorization.from), nonce: authorization.nonce, settling: { version: sent.version, payment, requirements } };
  },
  payer: (env, decoded) => signedPayer(decoded, env.opts.asset),
  async validNow(env, d, at) {
    const a = d.authorization;
    if (paymentMismatch(d, routeOf(env, at)) || BigInt(a.validAfter) > at.nowSeconds || BigInt(a.validBefore) <= at.nowSeconds) return null;
    // the store's answer travels while the signature is recovered
    const fresh = unseen(env, a.from, a.nonce);
    await oneTurn();
    const payer = await signedPayer(d, env.opts.asset);
    return payer && (await fresh) ? payer : null;
  },
  settle: (env, locked) => settleByFacilitator(env, locked, undefined),
  settledAgain: async (_env, locked, transaction) => settlementHeaders(locked.settling.version, { success: true, transaction, payer: locked.payer }),
};
