/**
 * x402 (versions 1 and 2) as the second credential of protected routes. Every
 * 402 offers both: the v1 body (`accepts`) and the v2 `PAYMENT-REQUIRED`
 * header; a proof comes in v1's `X-PAYMENT` or v2's `PAYMENT-SIGNATURE` and is
 * answered in the same version (`X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE`),
 * with the same guarantees. The gate offers primitives; the route's request
 * stages (http/stages/) put them in the order that makes charging exactly-once:
 *
 *   challenge   the 402 of a request without a proof (challenge.ts);
 *   authorize   decode the proof, match this route's own requirements (exact
 *               amount, payTo, asset, network, an authorization no longer
 *               than maxTimeoutSeconds), verify with the facilitator, lock
 *               (payer, nonce) durably, resolve the payer's own treasury
 *               (authorize.ts, payer-treasury.ts);
 *   ...         the route claims the Idempotency-Key and the treasury's
 *               conflict slot and runs every check (nothing is charged yet);
 *   settle      only then: the facilitator moves the USDC; a failure undoes
 *               the lock and the treasury created for the request (402)
 *               (payment-claim.ts, settlement.ts);
 *   release     a request that is refused, replayed or conflicted before
 *               settlement frees its proof (it can be used again).
 *
 * The lock is a lease the request renews while it runs. If the request dies,
 * the retry with the same proof takes it over: an unsettled one is settled
 * (once: the facilitator settles an authorization at most once), a settled
 * one that was never served is served without a second charge.
 *
 * The payer is the identity. It lands only on a treasury it stands behind:
 * one registered with its signed ownership proof, or the one its first paid
 * call created (`paid`). A bare registration of its address is never chosen.
 */
import type { Request, Response } from "express";
import { authorizer } from "./authorize";
import { challenger } from "./challenge";
import { facilitatorClient } from "./facilitator-client";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import { KnownPayers } from "./known-payers";
import type { PaymentClaim } from "./payment-claim";
import { paymentOf, type RequirementsV2 } from "./payment-match";
import { proofSigner, sentProof, validNowPayer } from "./payment-identity";
import { routeRequirements } from "./route-requirements";
import { settlePending } from "./settlement";
import { SessionRedeemer } from "./schemes/session/redeemer";

export { X402_NETWORK } from "./payment-match";
export type { PaymentGateContext } from "./gate-context";
export type { PaymentClaim } from "./payment-claim";

export interface PaymentGate {
  enabled: boolean;
  /** the 402 of a priced route without a credential; `extensions`: what the route offers beside the price (sign-in-with-x) */
  challenge(req: Request, res: Response, route: { method: string; path: string }, extensions?: Record<string, unknown>): Promise<void>;
  /**
   * A verified, locked payment, or null when the answer (the 402 refusal) was already written. A spent
   * proof proves nothing any more (it is public on chain once settled): it is refused, never a key to a
   * stored answer. Throws payment_in_progress (409) while another request holds the same proof.
   */
  authorize(req: Request, res: Response, route: { method: string; path: string }): Promise<PaymentClaim | null>;
  /** x402 version 2's PaymentRequired of a priced route (what its 402 carries in PAYMENT-REQUIRED) */
  paymentRequired(
    route: { method: string; path: string },
    error?: string,
  ): {
    x402Version: 2;
    error: string;
    resource: { url: string; description: string; mimeType: string };
    accepts: RequirementsV2[];
    extensions: Record<string, unknown>;
  };
  /**
   * the payer whose signature a request's proof (either version) carries in the scheme that pays it (a session's
   * voucher, an upto authorization, else the EIP-3009 authorization), else undefined: authorize's payer
   */
  verifiedPayer(header: (name: string) => string | undefined): Promise<string | undefined>;
  /**
   * Who stands behind a request's payment, for its rate limit (a fresh key costs nothing, and a spent proof is
   * public, so a signature alone proves no identity): the payer when the proof is valid now for this priced
   * route (payment-identity.ts: unexpired, unspent, a voucher on the channel's next amount) and signed by a payer
   * this service has settled a payment of; null for any other proof on a priced route; undefined on a route
   * that takes no payment (the header buys nothing there).
   */
  provenPayer(req: Request): Promise<string | null | undefined>;
  /**
   * A payment whose settlement's outcome was unknown (pending), settled now (once: the facilitator settles an
   * authorization at most once, and EIP-3009's nonce makes a second transfer impossible): `settled` (also when it
   * was not pending), `failed` (it cannot be collected; the record says so), or `unknown` again.
   */
  settlePending(payment: { payer: string; nonce: string }): Promise<"settled" | "failed" | "unknown">;
  /** x402 sessions' vouchers redeemed on chain in batches (when sessions are offered) */
  redeemer: SessionRedeemer | undefined;
  /** the request a payment paid for (its own, or a key's credit) answered with this status: the payment is spent */
  spent(payment: { payer: string; nonce: string }, status: number): Promise<void>;
}

/** does the request carry a payment proof of either x402 version? */
export const hasPayment = (req: Request): boolean => paymentOf((n) => req.header(n)) !== undefined;

export function createPaymentGate(ctx: PaymentGateContext, opts: PaymentGateOptions): PaymentGate {
  const facilitator = facilitatorClient(opts.facilitator, ctx.config.x402.facilitatorTimeoutMs);
  const requirements = routeRequirements(ctx, opts);
  const knownPayers = new KnownPayers((payer) => ctx.stores.payments.hasSettled(payer));
  const validNow = validNowPayer(ctx, opts, requirements);

  const sessions = ctx.config.x402.sessions;
  return {
    enabled: ctx.config.x402.enabled,
    redeemer:
      ctx.config.x402.enabled && sessions
        ? new SessionRedeemer(ctx, facilitator, { payTo: requirements.payTo, asset: opts.asset.address, policy: sessions.redeem })
        : undefined,
    paymentRequired: (route, error = "payment_required") => requirements.paymentRequired(route.path, requirements.priceOf(route), error),
    verifiedPayer: async (header) => {
      const proof = sentProof(header);
      return proof && proofSigner(proof, opts.asset);
    },
    settlePending: (payment) => settlePending(ctx, facilitator, knownPayers, payment),
    spent: async (payment, status) => {
      await ctx.stores.payments.outcome(payment.payer, payment.nonce, status);
    },
    async provenPayer(req) {
      const price = opts.prices.for(req.method === "HEAD" ? "GET" : req.method, req.path);
      if (!price) return undefined;
      const proof = sentProof((n) => req.header(n));
      const payer = proof && (await validNow(proof, { path: req.path, price }));
      return payer && (await knownPayers.has(payer)) ? payer : null;
    },
    challenge: challenger(ctx, opts, requirements),
    authorize: authorizer(ctx, opts, { requirements, facilitator, knownPayers }),
  };
}
