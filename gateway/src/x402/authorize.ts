/**
 * A request's payment proof authorized, before anything is charged, the same way for every scheme: offered on
 * this route, decoded (once, when the request was read), matched to this route's own requirements, verified
 * (the facilitator, or the scheme's own signature check), locked (payer, nonce) durably under a lease with
 * the payer's own treasury resolved (payer-treasury.ts) in one transaction, and the claim made
 * (payment-claim.ts). The outcome is data: refused (a 402 the HTTP stage writes) or claimed (the claim, the
 * credential, the treasury); a proof another request holds throws payment_in_progress (409, never a 402: a
 * conforming client would pay again); a spent proof proves nothing (it is public on chain once settled) and
 * is refused. The facilitator's outage is payment_facilitator_unavailable (503, facilitator-client.ts).
 */
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newHolder } from "../store/lease";
import { paymentClaim, type PaymentClaim } from "./payment-claim";
import { payerTreasury } from "./payer-treasury";
import type { PaymentAnswer, RouteRequirements } from "./route-requirements";
import { payerCredential, type AnyScheme, type LockedPayment, type PricedRoute, type Refusal, type SchemeEnv, type SentPayment } from "./schemes/scheme";

/** what authorizing a proof gave: a 402 to write, or a claimed payment with its credential */
export type GateOutcome = ({ kind: "refused" } & PaymentAnswer) | { kind: "claimed"; claim: PaymentClaim; credential: Credential; treasuryId: string };

export type Authorize = (sent: SentPayment | undefined, route: PricedRoute) => Promise<GateOutcome>;

export function authorizer(env: SchemeEnv, requirements: RouteRequirements): Authorize {
  const { ctx } = env;
  return async (sent, route) => {
    const price = requirements.priceOf(route);
    const scheme: AnyScheme | undefined = sent?.scheme;
    const refused = (refusal: Refusal): GateOutcome => ({ kind: "refused", ...requirements.refusal(route.path, price, refusal, scheme) });
    if (!sent || !scheme) return refused({ error: "invalid_payment_header" });
    if (scheme.offers(env, price).length === 0) return refused({ error: "unsupported_scheme_or_network" });
    if (sent.proof === undefined) return refused({ error: "invalid_payment_header" });
    const at = { route, price, nowSeconds: BigInt(Math.floor(ctx.clock.now().getTime() / 1000)) };
    const mismatch = scheme.match(env, sent.proof, at, sent);
    if (mismatch) return refused(mismatch);
    const verified = await scheme.verify(env, sent.proof, at, sent);
    if ("error" in verified) return refused(verified);

    const { payer, nonce } = verified;
    const holder = newHolder("pay");
    if (verified.lockFree) {
      // nothing to lock: the scheme's settle charges and records the payment in one transaction, one request alone
      const treasury = await payerTreasury(ctx, payer);
      const claimed: LockedPayment = { ...verified, route, price, ...treasury, holder, takenOver: false };
      return {
        kind: "claimed",
        claim: paymentClaim(env, scheme, claimed),
        credential: payerCredential(payer, treasury.treasuryId),
        treasuryId: treasury.treasuryId,
      };
    }
    // lock the proof (under a lease) and resolve the payer's treasury in one transaction; a scheme's atLock joins it
    const locked = await ctx.tx.transaction(async () => {
      const lock = await ctx.stores.payments.lock({
        payer,
        nonce,
        route: `${route.method} ${route.path}`,
        amountAtomic: price.atomic,
        treasuryId: null,
        holder,
        now: ctx.clock.now(),
      });
      if (lock.kind === "busy" || lock.kind === "used") return lock;
      const treasury = lock.kind === "settled_unserved" && lock.treasuryId ? { treasuryId: lock.treasuryId, created: false } : await payerTreasury(ctx, payer);
      const claimed: LockedPayment = {
        ...verified,
        route,
        price,
        ...treasury,
        holder,
        takenOver: lock.kind === "locked" && lock.takenOver,
        ...(lock.kind === "settled_unserved" ? { alreadySettled: { transaction: lock.transactionHash ?? "" } } : {}),
      };
      const atLock = lock.kind === "locked" && !verified.onlyServedSettled && scheme.atLock ? await scheme.atLock(env, claimed) : undefined;
      return { kind: lock.kind, claimed: { ...claimed, ...(atLock === undefined ? {} : { atLock }) } };
    });
    if (locked.kind === "used") {
      // a client that lost its answer pays the retry with a fresh proof (same Idempotency-Key or payment-identifier):
      // the stored answer, and the fresh proof is released unsettled
      return refused(verified.usedRefusal ?? { error: "payment_already_used", extra: { payer } });
    }
    if (locked.kind === "busy") {
      // not a 402: a conforming client would pay again
      throw new TreasuryError(
        "payment_in_progress",
        "this payment is being served by another request; retry after Retry-After seconds with the same proof (it is charged at most once)",
        { payer, retry_after_seconds: 1 },
        { "Retry-After": "1" },
      );
    }
    if (verified.onlyServedSettled && locked.kind === "locked") {
      // a proof that pays nothing new, locked afresh: it is no dead request's payment, so it is refused
      await ctx.stores.payments.release(payer, nonce, holder);
      return refused(verified.onlyServedSettled);
    }
    const { treasuryId } = locked.claimed;
    return { kind: "claimed", claim: paymentClaim(env, scheme, locked.claimed), credential: payerCredential(payer, treasuryId), treasuryId };
  };
}
