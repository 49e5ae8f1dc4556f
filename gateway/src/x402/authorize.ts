/**
 * A request's payment proof authorized, before anything is charged: decoded, matched to this route's own
 * requirements (exact amount, payTo, asset, network, an authorization no longer than maxTimeoutSeconds),
 * verified with the facilitator, locked (payer, nonce) durably under a lease, and the payer's own
 * treasury resolved (payer-treasury.ts), in one transaction. A refused proof is answered 402 here (null);
 * a proof another request holds is 409 payment_in_progress (never a 402: a conforming client would pay
 * again); a spent proof proves nothing (it is public on chain once settled) and is refused.
 */
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Request, Response } from "express";
import { getAddress } from "viem";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { newHolder } from "../store/lease";
import { verifyPayment, type FacilitatorClient } from "./facilitator-client";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import type { KnownPayers } from "./known-payers";
import { paymentClaim, type PaymentClaim } from "./payment-claim";
import { sentProof } from "./payment-identity";
import { paymentMismatch, signedPayer, type X402Version } from "./payment-match";
import { payerTreasury } from "./payer-treasury";
import type { RouteRequirements } from "./route-requirements";
import { reasonCode } from "./settlement";
import { sessionAuthorizer } from "./schemes/session/session-authorize";
import { uptoAuthorizer } from "./schemes/upto/upto-authorize";

export type Authorize = (req: Request, res: Response, route: { method: string; path: string }) => Promise<PaymentClaim | null>;

export function authorizer(
  ctx: PaymentGateContext,
  opts: PaymentGateOptions,
  deps: { requirements: RouteRequirements; facilitator: FacilitatorClient; knownPayers: KnownPayers },
): Authorize {
  const cfg = ctx.config.x402;
  const { requirements: reqs, facilitator } = deps;
  const session = sessionAuthorizer(ctx, deps);
  const upto = uptoAuthorizer(ctx, opts, deps);
  return async (req, res, route) => {
    const price = reqs.priceOf(route);
    const refuse = (error: string, extra: Record<string, unknown> = {}) => reqs.refuse(req, res, price, error, extra);
    const sent = sentProof((n) => req.header(n));
    // a session's voucher (x402 `batch-settlement`): its own path, the same guarantees
    if (sent?.scheme === "session") return session(req, res, route, sent.raw);
    // a signed maximum (x402 `upto`) on a metered route: charged what the call used
    if (sent?.scheme === "upto") return upto(req, res, route, sent.raw);
    const version: X402Version = sent?.version ?? 1;
    const decoded = sent?.decoded;
    const resource = ctx.links.url(req.path);
    const mismatch = paymentMismatch(decoded, {
      priceAtomic: price.atomic,
      payTo: reqs.payTo,
      asset: getAddress(opts.asset.address),
      resource,
      maxTimeoutSeconds: cfg.maxTimeoutSeconds,
      nowSeconds: BigInt(Math.floor(ctx.clock.now().getTime() / 1000)),
    });
    if (mismatch || !decoded) {
      refuse(mismatch?.error ?? "invalid_payment_header", mismatch?.extra ?? {});
      return null;
    }
    const { authorization } = decoded;
    // the facilitator gets the proof in the version it was made in, with this route's requirements in that version
    const payment = (decoded.version === 2 ? decoded.payment : { ...decoded.payment, x402Version: 1 }) as PaymentPayload;
    const requirements = (version === 2 ? reqs.v2(price) : reqs.v1(req, price)) as PaymentRequirements;

    // the facilitator answered and refused the proof itself (malformed, say): the client's fault, a 402
    const verification = await verifyPayment(facilitator, payment, requirements);
    if (verification.refused) return (refuse("invalid_payment", { reason: reasonCode(verification.refused.reason) }), null);
    const verified = verification.verified;
    // an authorization used on chain may be this service's own payment, settled by a request that died before
    // answering: with a valid signature and this service's record of it, the lock below decides (take over, or refuse)
    const ownDeadPayment =
      !verified.isValid &&
      /nonce_used/.test(verified.invalidReason ?? "") &&
      (await signedPayer(decoded, opts.asset))?.toLowerCase() === authorization.from.toLowerCase() &&
      (await ctx.stores.payments.seen(authorization.from, authorization.nonce));
    if (!verified.isValid && !ownDeadPayment) {
      refuse(reasonCode(verified.invalidReason) ?? "invalid_payment", { payer: verified.payer });
      return null;
    }

    const payer = getAddress(authorization.from);
    const nonce = authorization.nonce;
    const routeKey = `${route.method} ${route.path}`;
    const holder = newHolder("pay");
    // lock the proof (under a lease) and resolve the payer's treasury in one transaction
    const locked = await ctx.tx.transaction(async () => {
      const lock = await ctx.stores.payments.lock({
        payer,
        nonce,
        route: routeKey,
        amountAtomic: price.atomic,
        treasuryId: null,
        holder,
        now: ctx.clock.now(),
      });
      if (lock.kind === "busy" || lock.kind === "used") return lock;
      const treasury = lock.kind === "settled_unserved" && lock.treasuryId ? { treasuryId: lock.treasuryId, created: false } : await payerTreasury(ctx, payer);
      return { ...lock, ...treasury };
    });
    if (locked.kind === "used") {
      // a client that lost its answer pays the retry with a fresh proof (same Idempotency-Key or payment-identifier):
      // the stored answer, and the fresh proof is released unsettled
      refuse("payment_already_used", { payer });
      return null;
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
    const { treasuryId, created } = locked;
    const credential: Credential = { kind: "x402", scope: `payer:${payer.toLowerCase()}`, treasuryId, subject: payer };
    res.locals.credential = credential;
    res.setHeader("X-Treasury-Id", treasuryId);
    return paymentClaim(
      ctx,
      deps,
      {
        payer,
        nonce,
        treasuryId,
        created,
        holder,
        takenOver: locked.kind === "locked" && locked.takenOver,
        alreadySettled: locked.kind === "settled_unserved" ? { transaction: locked.transactionHash ?? "" } : undefined,
        version,
        payment,
        requirements,
      },
      { res, refuse },
    );
  };
}
