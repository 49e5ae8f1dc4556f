/**
 * x402 `upto` (a signed maximum, settled at what the call used) on a metered route, with the guarantees of an
 * `exact` payment: matched to this route (its price is the maximum; permit.ts), verified by the facilitator,
 * locked as (payer, `upto:<Permit2 nonce>`), settled once by the facilitator for what the answer used. A retry
 * of a dead request's payment takes its lock over; the facilitator answers a second settlement of a used
 * authorization with the first one (facilitator/upto.ts), so it is charged at most once.
 *
 * Valid now (the rate limit's identity): it matches this metered route, validAfter <= now < deadline, its
 * Permit2 signature is its `from`'s, and (payer, `upto:<nonce>`) is in no row of x402_payments.
 */
import { PERMIT2_ADDRESS, uptoPermit2WitnessTypes } from "@x402/evm";
import { getAddress, hashTypedData } from "viem";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { recoverHashSigner } from "../../../lib/recover-signer";
import { verifyPayment } from "../../facilitator-client";
import { X402_CHAIN_ID, type PaymentPayloadV2 } from "../../payment-match";
import { reasonCode, settleByFacilitator, settlementHeaders, type FacilitatorSettling } from "../../settlement";
import { oneTurn, unseen } from "../proof-checks";
import type { PaymentScheme, RouteMatch, SchemeEnv } from "../scheme";
import { decodeUptoAuthorization, isUptoPayment, UPTO_SCHEME, uptoMismatch, type UptoAuthorization } from "./permit";

/** an `upto` proof: the payment as sent and its Permit2 authorization */
export interface UptoProof {
  payment: PaymentPayloadV2;
  a: UptoAuthorization;
}

const matchOf = (env: SchemeEnv, at: RouteMatch, facilitator: `0x${string}`) => ({
  priceAtomic: at.price.atomic,
  payTo: env.requirements.payTo,
  asset: getAddress(env.opts.asset.address),
  facilitator,
  maxTimeoutSeconds: env.ctx.config.x402.maxTimeoutSeconds,
  nowSeconds: at.nowSeconds,
});

/** an `upto` authorization's payer: the Permit2 signature's signer when it is the authorization's `from`, else null */
async function uptoSigner({ payment, a }: UptoProof): Promise<string | null> {
  try {
    // recovered natively (lib/recover-signer.ts), as a voucher's signer is
    const hash = hashTypedData({
      domain: { name: "Permit2", chainId: X402_CHAIN_ID, verifyingContract: getAddress(PERMIT2_ADDRESS) },
      types: uptoPermit2WitnessTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: {
        permitted: { token: a.token, amount: a.maximum },
        spender: a.spender,
        nonce: BigInt(a.nonce),
        deadline: a.deadline,
        witness: { to: a.to, facilitator: a.facilitator, validAfter: a.validAfter },
      },
    });
    const signer = await recoverHashSigner(hash, (payment.payload as { signature: `0x${string}` }).signature);
    return signer.toLowerCase() === a.from.toLowerCase() ? a.from.toLowerCase() : null;
  } catch {
    return null;
  }
}

export const uptoScheme: PaymentScheme<UptoProof, FacilitatorSettling> = {
  name: UPTO_SCHEME,
  recognizes: (sent) => isUptoPayment(sent.raw),
  decode(sent) {
    const payment = sent.raw as unknown as PaymentPayloadV2;
    const a = decodeUptoAuthorization(payment);
    return a && { payment, a };
  },
  /** a metered route's offer: the payer signs the route's price as a maximum, and is charged what the call used */
  offers(env, price) {
    const facilitatorAddress = env.ctx.config.x402.uptoFacilitator;
    if (!price.meter || !facilitatorAddress) return [];
    const { name, version } = env.opts.asset;
    return [{ ...env.requirements.v2(price), scheme: UPTO_SCHEME, extra: { name, version, assetTransferMethod: "permit2", facilitatorAddress } }];
  },
  match: (env, { payment, a }, at) => uptoMismatch(payment, a, matchOf(env, at, env.ctx.config.x402.uptoFacilitator!)),
  async verify(env, { payment, a }, at) {
    const requirements = uptoScheme.offers(env, at.price)[0] as unknown as PaymentRequirements;
    const proof = payment as unknown as PaymentPayload;
    const nonce = `upto:${a.nonce}`;
    const verification = await verifyPayment(env.facilitator, proof, requirements);
    if (verification.refused) return { error: "invalid_payment", extra: { reason: reasonCode(verification.refused.reason), payer: a.from } };
    const verified = verification.verified;
    // a used nonce may be this service's own payment, settled by a request that died before answering: the lock decides
    const ownDeadPayment = !verified.isValid && /nonce/.test(verified.invalidReason ?? "") && (await env.ctx.stores.payments.seen(a.from, nonce));
    if (!verified.isValid && !ownDeadPayment) return { error: reasonCode(verified.invalidReason) ?? "invalid_payment", extra: { payer: a.from } };
    return { payer: a.from, nonce, settling: { version: 2, payment: proof, requirements } };
  },
  payer: async (_env, proof) => (await uptoSigner(proof)) ?? undefined,
  async validNow(env, proof, at) {
    const { a } = proof;
    const facilitator = env.ctx.config.x402.uptoFacilitator;
    if (!facilitator || uptoScheme.offers(env, at.price).length === 0) return null;
    if (uptoMismatch(proof.payment, a, matchOf(env, at, facilitator)) || a.validAfter > at.nowSeconds || a.deadline <= at.nowSeconds) return null;
    const fresh = unseen(env, a.from, `upto:${a.nonce}`);
    await oneTurn();
    const payer = await uptoSigner(proof);
    return payer && (await fresh) ? payer : null;
  },
  // charged what the call used (at most its signed maximum)
  settle: (env, locked, used) => settleByFacilitator(env, locked, used),
  settledAgain: async (_env, locked, transaction) => settlementHeaders(2, { success: true, transaction, payer: locked.payer }),
};
