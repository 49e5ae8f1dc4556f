/**
 * Who a payment proof names as its payer, read by the scheme that pays it (the dispatch authorize.ts makes:
 * a session voucher, an `upto` authorization, else `exact`'s EIP-3009 authorization), and whether the proof
 * is valid now. A settled proof is public (on chain, or sent in the clear to this service) and its signature
 * still recovers to its payer, so a signature alone names nobody: only a proof that could pay this route now
 * gives its payer's identity to the rate limit (payment-gate.ts `provenPayer`), and a payment-identifier is
 * scoped to the payer of the scheme that pays (http/stages/payment-identifier.ts), never to an authorization
 * carried beside it.
 *
 * Valid now, checked without the facilitator or the chain, from the proof and the store alone:
 *   exact    it matches this route (paymentMismatch: price, payTo, asset, network, validity window),
 *            validAfter <= now < validBefore, its signature is its `from`'s, and (payer, nonce) is in no row
 *            of x402_payments (locked, pending or settled: a proof this service has seen is spent or in use);
 *   session  it matches this route and this service's terms, its voucher is signed by the channel's payer
 *            authorizer, the channel is one this service holds with no withdrawal pending, and its
 *            cumulative amount is exactly what the channel was charged plus this route's price, within the
 *            balance (a charged voucher is never above what was charged: it never matches again);
 *   upto     it matches this metered route, validAfter <= now < deadline, its Permit2 signature is its
 *            `from`'s, and (payer, `upto:<nonce>`) is in no row of x402_payments.
 * The rows of settled payments are kept 7 days (store/retention.ts), far past any authorization's validBefore
 * (at most maxTimeoutSeconds + 30 s ahead), so a swept row's proof has expired by then.
 */
import { PERMIT2_ADDRESS, uptoPermit2WitnessTypes } from "@x402/evm";
import { getAddress, hashTypedData } from "viem";
import { recoverHashSigner } from "../lib/recover-signer";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import {
  fromHeaderJson,
  paymentMismatch,
  paymentOf,
  signedPayer,
  X402_CHAIN_ID,
  type DecodedPayment,
  type PaymentPayloadV2,
  type X402Version,
} from "./payment-match";
import type { RoutePrice } from "./prices";
import type { RouteRequirements } from "./route-requirements";

import { channelIdOf, decodeSessionPayment, isSessionPayment, sessionMismatch, voucherSigned } from "./schemes/session/voucher";
import { decodeUptoAuthorization, isUptoPayment, uptoMismatch } from "./schemes/upto/permit";

/** one turn of the event loop: a store query just made leaves before the CPU recovers a signature, so the two overlap */
const oneTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** a request's proof, by the scheme that pays it; `raw`: a version 2 proof's object as sent */
export type SentProof =
  | { scheme: "session"; version: 2; raw: PaymentPayloadV2 }
  | { scheme: "upto"; version: 2; raw: PaymentPayloadV2 }
  | { scheme: "exact"; version: X402Version; decoded: DecodedPayment | undefined; raw: Record<string, unknown> | undefined };

/** the proof a request carries (v2's PAYMENT-SIGNATURE if sent, else v1's X-PAYMENT), by the scheme that pays it, or undefined when none */
export function sentProof(header: (name: string) => string | undefined): SentProof | undefined {
  const sent = paymentOf(header);
  if (!sent) return undefined;
  const raw = sent.version === 2 ? fromHeaderJson(sent.header) : undefined;
  if (isSessionPayment(raw)) return { scheme: "session", version: 2, raw };
  if (isUptoPayment(raw)) return { scheme: "upto", version: 2, raw };
  return { scheme: "exact", version: sent.version, decoded: sent.decoded, raw };
}

type Asset = PaymentGateOptions["asset"];

/** the payer (lower-case) whose signature the proof carries in the scheme that pays it, else undefined */
export async function proofSigner(proof: SentProof, asset: Asset): Promise<string | undefined> {
  try {
    if (proof.scheme === "exact") return await signedPayer(proof.decoded, asset);
    if (proof.scheme === "upto") return (await uptoSigner(proof.raw)) ?? undefined;
    const s = decodeSessionPayment(proof.raw);
    if (!s || channelIdOf(s.config) !== s.voucher.channelId || !(await voucherSigned(s))) return undefined;
    return s.config.payer.toLowerCase();
  } catch {
    return undefined; // a malformed proof names nobody
  }
}

/**
 * The payer of a proof that is valid now for this route (the rules above), else null: a malformed proof too (it
 * is counted by its client's address). Reads the store at most once (exact and upto: the payment's row, while
 * the signature is recovered; a session: its channel), never the chain.
 */
export function validNowPayer(
  ctx: Pick<PaymentGateContext, "config" | "clock" | "links" | "stores">,
  opts: Pick<PaymentGateOptions, "asset">,
  reqs: RouteRequirements,
) {
  const cfg = ctx.config.x402;
  const asset = getAddress(opts.asset.address);
  /** no row of this payment in the store (a store that fails answers "seen": the proof names nobody) */
  const unseen = (payer: string, nonce: string) =>
    ctx.stores.payments.seen(payer, nonce).then(
      (seen) => !seen,
      () => false,
    );
  const validNow = async (proof: SentProof, route: { path: string; price: RoutePrice }): Promise<string | null> => {
    const now = BigInt(Math.floor(ctx.clock.now().getTime() / 1000));
    const priceAtomic = route.price.atomic;
    if (proof.scheme === "exact") {
      const d = proof.decoded;
      const match = { priceAtomic, payTo: reqs.payTo, asset, resource: ctx.links.url(route.path), maxTimeoutSeconds: cfg.maxTimeoutSeconds, nowSeconds: now };
      if (!d || paymentMismatch(d, match) || BigInt(d.authorization.validAfter) > now || BigInt(d.authorization.validBefore) <= now) return null;
      // the store's answer travels while the signature is recovered
      const fresh = unseen(d.authorization.from, d.authorization.nonce);
      await oneTurn();
      const payer = await signedPayer(d, opts.asset);
      return payer && (await fresh) ? payer : null;
    }
    if (proof.scheme === "upto") {
      const a = decodeUptoAuthorization(proof.raw);
      if (!a || !cfg.uptoFacilitator || reqs.upto(route.price).length === 0) return null;
      const match = { priceAtomic, payTo: reqs.payTo, asset, facilitator: cfg.uptoFacilitator, maxTimeoutSeconds: cfg.maxTimeoutSeconds, nowSeconds: now };
      if (uptoMismatch(proof.raw, a, match) || a.validAfter > now || a.deadline <= now) return null;
      const fresh = unseen(a.from, `upto:${a.nonce}`);
      await oneTurn();
      const payer = await uptoSigner(proof.raw);
      return payer && (await fresh) ? payer : null;
    }
    const s = decodeSessionPayment(proof.raw);
    if (!s || !reqs.sessions || sessionMismatch(s, { priceAtomic, terms: reqs.sessions }) || !(await voucherSigned(s))) return null;
    const channel = await ctx.stores.channels.get(s.voucher.channelId);
    if (!channel || channel.withdrawRequestedAt > 0) return null;
    const cumulative = s.voucher.maxClaimableAmount;
    const balance = channel.balance + (s.type === "deposit" ? s.deposit.amount : 0n);
    return cumulative === channel.charged + priceAtomic && cumulative <= balance ? s.config.payer.toLowerCase() : null;
  };
  return (proof: SentProof, route: { path: string; price: RoutePrice }): Promise<string | null> => validNow(proof, route).catch(() => null);
}

/** an `upto` authorization's payer: the Permit2 signature's signer when it is the authorization's `from`, else null */
async function uptoSigner(payment: PaymentPayloadV2): Promise<string | null> {
  const a = decodeUptoAuthorization(payment);
  if (!a) return null;
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
