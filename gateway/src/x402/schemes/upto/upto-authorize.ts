/**
 * An `upto` payment (a signed maximum, settled at what the call used) authorized on a metered route, with the
 * guarantees of an `exact` one (authorize.ts): matched to this route (its price is the maximum), verified by
 * the facilitator, locked durably as (payer, `upto:<Permit2 nonce>`) under a lease, the payer's treasury
 * resolved; then settled once, by the same claim as `exact` (payment-claim.ts), for what the answer used.
 * A retry of a dead request's payment takes its lock over; the facilitator answers a second settlement of a
 * used authorization with the first one (upto.ts), so it is charged at most once.
 */
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Request, Response } from "express";
import { getAddress } from "viem";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { newHolder } from "../../../store/lease";
import { verifyPayment, type FacilitatorClient } from "../../facilitator-client";
import type { PaymentGateContext, PaymentGateOptions } from "../../gate-context";
import type { KnownPayers } from "../../known-payers";
import { paymentClaim, type PaymentClaim } from "../../payment-claim";
import type { PaymentPayloadV2 } from "../../payment-match";
import { payerTreasury } from "../../payer-treasury";
import type { RouteRequirements } from "../../route-requirements";
import { reasonCode } from "../../settlement";
import { decodeUptoAuthorization, uptoMismatch } from "./permit";

export function uptoAuthorizer(
  ctx: PaymentGateContext,
  opts: PaymentGateOptions,
  deps: { requirements: RouteRequirements; facilitator: FacilitatorClient; knownPayers: KnownPayers },
) {
  const cfg = ctx.config.x402;
  return async (req: Request, res: Response, route: { method: string; path: string }, payment: PaymentPayloadV2): Promise<PaymentClaim | null> => {
    const price = deps.requirements.priceOf(route);
    const refuse = (error: string, extra: Record<string, unknown> = {}) => deps.requirements.refuse(req, res, price, error, extra);
    const offered = deps.requirements.upto(price)[0];
    if (!offered || !cfg.uptoFacilitator) return (refuse("unsupported_scheme_or_network"), null);
    const a = decodeUptoAuthorization(payment);
    if (!a) return (refuse("invalid_payment_header"), null);
    const mismatch = uptoMismatch(payment, a, {
      priceAtomic: price.atomic,
      payTo: deps.requirements.payTo,
      asset: getAddress(opts.asset.address),
      facilitator: cfg.uptoFacilitator,
      maxTimeoutSeconds: cfg.maxTimeoutSeconds,
      nowSeconds: BigInt(Math.floor(ctx.clock.now().getTime() / 1000)),
    });
    if (mismatch) return (refuse(mismatch.error, mismatch.extra), null);
    const requirements = offered as unknown as PaymentRequirements;
    const proof = payment as unknown as PaymentPayload;
    const nonce = `upto:${a.nonce}`;

    const verification = await verifyPayment(deps.facilitator, proof, requirements);
    if (verification.refused) return (refuse("invalid_payment", { reason: reasonCode(verification.refused.reason), payer: a.from }), null);
    const verified = verification.verified;
    // a used nonce may be this service's own payment, settled by a request that died before answering: the lock decides
    const ownDeadPayment = !verified.isValid && /nonce/.test(verified.invalidReason ?? "") && (await ctx.stores.payments.seen(a.from, nonce));
    if (!verified.isValid && !ownDeadPayment) return (refuse(reasonCode(verified.invalidReason) ?? "invalid_payment", { payer: a.from }), null);

    const holder = newHolder("pay");
    const locked = await ctx.tx.transaction(async () => {
      const lock = await ctx.stores.payments.lock({
        payer: a.from,
        nonce,
        route: `${route.method} ${route.path}`,
        amountAtomic: price.atomic,
        treasuryId: null,
        holder,
        now: ctx.clock.now(),
      });
      if (lock.kind === "busy" || lock.kind === "used") return lock;
      const treasury = lock.kind === "settled_unserved" && lock.treasuryId ? { treasuryId: lock.treasuryId, created: false } : await payerTreasury(ctx, a.from);
      return { ...lock, ...treasury };
    });
    if (locked.kind === "used") return (refuse("payment_already_used", { payer: a.from }), null);
    if (locked.kind === "busy") {
      throw new TreasuryError(
        "payment_in_progress",
        "this payment is being served by another request; retry after Retry-After seconds with the same proof (it is charged at most once)",
        { payer: a.from, retry_after_seconds: 1 },
        { "Retry-After": "1" },
      );
    }
    const credential: Credential = { kind: "x402", scope: `payer:${a.from.toLowerCase()}`, treasuryId: locked.treasuryId, subject: a.from };
    res.locals.credential = credential;
    res.setHeader("X-Treasury-Id", locked.treasuryId);
    return paymentClaim(
      ctx,
      deps,
      {
        payer: a.from,
        nonce,
        treasuryId: locked.treasuryId,
        created: locked.created,
        holder,
        takenOver: locked.kind === "locked" && locked.takenOver,
        alreadySettled: locked.kind === "settled_unserved" ? { transaction: locked.transactionHash ?? "" } : undefined,
        version: 2,
        payment: proof,
        requirements,
      },
      { res, refuse },
    );
  };
}
