/**
 * x402 (versions 1 and 2) as the second credential of protected routes. Every
 * 402 offers both: the v1 body (`accepts`) and the v2 `PAYMENT-REQUIRED`
 * header; a proof comes in v1's `X-PAYMENT` or v2's `PAYMENT-SIGNATURE` and is
 * answered in the same version (`X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE`),
 * with the same guarantees, in every scheme of the registry (schemes/index.ts: a
 * scheme is a folder and a line). The gate offers primitives whose answers are
 * outcomes (data, never an HTTP response); the route's request stages
 * (http/stages/) write them, in the order that makes charging exactly-once:
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
import { authorizer, type GateOutcome } from "./authorize";
import { challenger, type Challenge } from "./challenge";
import { facilitatorClient } from "./facilitator-client";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import { KnownPayers } from "./known-payers";
import type { RequirementsV2 } from "./payment-match";
import { routeRequirements, type PaymentAnswer } from "./route-requirements";
import { PAYMENT_SCHEMES } from "./schemes";
import type { AnyScheme, PricedRoute, Refusal, SchemeEnv, SentPayment } from "./schemes/scheme";
import { SessionRedeemer } from "./schemes/session/redeemer";
import { readPayment } from "./sent-payment";
import { settlePending } from "./settlement";

export { X402_NETWORK } from "./payment-match";
export type { PaymentGateContext } from "./gate-context";
export type { PaymentClaim, SettleOutcome } from "./payment-claim";
export type { GateOutcome } from "./authorize";
export type { PaymentAnswer } from "./route-requirements";
export type { SentPayment } from "./schemes/scheme";

export interface PaymentGate {
  enabled: boolean;
  /** the schemes it takes (the registry, or a test's) */
  schemes: readonly AnyScheme[];
  /** a request's proof, read once (the HTTP layer keeps it in the request's state), or undefined when it sent none */
  read(header: (name: string) => string | undefined): SentPayment | undefined;
  /** the 402 of a priced route without a credential; `extensions`: what the route offers beside the price (sign-in-with-x) */
  challenge: Challenge;
  /**
   * A verified, locked payment (claimed), or the 402 refusal to write (refused). A spent proof proves nothing
   * any more (it is public on chain once settled): it is refused, never a key to a stored answer. Throws
   * payment_in_progress (409) while another request holds the same proof.
   */
  authorize(sent: SentPayment | undefined, route: PricedRoute): Promise<GateOutcome>;
  /** the 402 of a refusal on a priced route (a settlement refused), in the refusing scheme's terms */
  refusal(route: PricedRoute, refusal: Refusal, scheme?: AnyScheme): PaymentAnswer;
  /** x402 version 2's PaymentRequired of a priced route (what its 402 carries in PAYMENT-REQUIRED) */
  paymentRequired(
    route: PricedRoute,
    error?: string,
  ): {
    x402Version: 2;
    error: string;
    resource: { url: string; description: string; mimeType: string };
    accepts: RequirementsV2[];
    extensions: Record<string, unknown>;
  };
  /** the payer whose signature a request's proof carries in the scheme that pays it, else undefined: authorize's payer */
  verifiedPayer(sent: SentPayment | undefined): Promise<string | undefined>;
  /**
   * Who stands behind a request's payment, for its rate limit (a fresh key costs nothing, and a spent proof is
   * public, so a signature alone proves no identity): the payer when the proof is valid now for this priced
   * route (each scheme's `validNow`: unexpired, unspent, a voucher on the channel's next amount) and signed by a
   * payer this service has settled a payment of; null for any other proof on a priced route; undefined on a
   * route that takes no payment (the header buys nothing there).
   */
  provenPayer(sent: SentPayment | undefined, route: PricedRoute): Promise<string | null | undefined>;
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

/** `schemes`: the registry (PAYMENT_SCHEMES) unless a test gives its own */
export function createPaymentGate(ctx: PaymentGateContext, opts: PaymentGateOptions, schemes: readonly AnyScheme[] = PAYMENT_SCHEMES): PaymentGate {
  const facilitator = facilitatorClient(opts.facilitator, ctx.config.x402.facilitatorTimeoutMs);
  const knownPayers = new KnownPayers((payer) => ctx.stores.payments.hasSettled(payer));
  const requirements = routeRequirements(ctx, opts, schemes, () => env);
  const env: SchemeEnv = { ctx, opts, requirements, facilitator, knownPayers };
  const nowSeconds = () => BigInt(Math.floor(ctx.clock.now().getTime() / 1000));

  const sessions = ctx.config.x402.sessions;
  return {
    enabled: ctx.config.x402.enabled,
    schemes,
    redeemer:
      ctx.config.x402.enabled && sessions
        ? new SessionRedeemer(ctx, facilitator, { payTo: requirements.payTo, asset: opts.asset.address, policy: sessions.redeem })
        : undefined,
    read: (header) => readPayment(header, schemes),
    paymentRequired: (route, error = "payment_required") => requirements.paymentRequired(route.path, requirements.priceOf(route), error),
    refusal: (route, refusal, scheme) => requirements.refusal(route.path, requirements.priceOf(route), refusal, scheme),
    verifiedPayer: async (sent) => {
      if (!sent || sent.proof === undefined) return undefined;
      return sent.scheme.payer(env, sent.proof).catch(() => undefined); // a malformed proof names nobody
    },
    settlePending: (payment) => settlePending(ctx, facilitator, knownPayers, payment),
    spent: async (payment, status) => {
      await ctx.stores.payments.outcome(payment.payer, payment.nonce, status);
    },
    async provenPayer(sent, route) {
      const price = opts.prices.for(route.method === "HEAD" ? "GET" : route.method, route.path);
      if (!price) return undefined;
      if (!sent || sent.proof === undefined) return null;
      const at = { route: { method: price.method, path: route.path }, price, nowSeconds: nowSeconds() };
      const payer = await sent.scheme.validNow(env, sent.proof, at).catch(() => null);
      return payer && (await knownPayers.has(payer)) ? payer : null;
    },
    challenge: challenger(requirements),
    authorize: authorizer(env, requirements),
  };
}
