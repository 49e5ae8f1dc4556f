/**
 * A session payment (`batch-settlement`) authorized, before anything is charged, with the guarantees of an
 * `exact` one (authorize.ts): matched to this route and this service's channel terms, the voucher's
 * signature checked here (no facilitator call while the channel's on-chain state is fresh), locked durably
 * as (payer, `session:<channel>:<cumulative amount>`) under a lease, the payer's treasury resolved.
 *
 * A voucher's cumulative amount must be exactly what this service has charged on the channel plus this
 * call's price. Anything else is answered with the scheme's corrective 402 (the channel's state here and the
 * last voucher the payer signed, so the official client resynchronises and signs again), or refused: a
 * voucher above the deposit, one whose signature is not the channel's payer authorizer's, a channel this
 * service never saw a deposit for. The charge itself (settle) moves the channel's `charged` by one
 * conditional UPDATE in the same transaction that marks the payment settled: exactly once, on any instance.
 */
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Request, Response } from "express";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { newHolder } from "../../../store/lease";
import { verifyPayment, type FacilitatorClient } from "../../facilitator-client";
import type { KnownPayers } from "../../known-payers";
import type { PaymentClaim } from "../../payment-claim";
import { payerTreasury } from "../../payer-treasury";
import type { PaymentPayloadV2 } from "../../payment-match";
import type { RoutePrice } from "../../prices";
import type { RouteRequirements } from "../../route-requirements";
import { reasonCode } from "../../settlement";
import { syncChannel } from "./channel-sync";
import { channelState, sessionClaim, type SessionContext } from "./session-claim";
import { decodeSessionPayment, sessionMismatch, voucherSigned, type SessionPayment } from "./voucher";

/** the scheme's own reason for a voucher whose base is not the server's (its client recovers from it) */
export const CUMULATIVE_MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

export interface SessionDeps {
  requirements: RouteRequirements;
  facilitator: FacilitatorClient;
  knownPayers: KnownPayers;
}

/** the session's requirements as the facilitator gets them (this route's price, this service's terms) */
const requirementsOf = (deps: SessionDeps, price: RoutePrice) => deps.requirements.session(price)[0] as unknown as PaymentRequirements;

export function sessionAuthorizer(ctx: SessionContext, deps: SessionDeps) {
  const terms = deps.requirements.sessions;
  return async (req: Request, res: Response, route: { method: string; path: string }, payment: PaymentPayloadV2): Promise<PaymentClaim | null> => {
    const price = deps.requirements.priceOf(route);
    const refuse = (error: string, extra: Record<string, unknown> = {}, state?: Record<string, unknown>) =>
      deps.requirements.refuse(req, res, price, error, extra, state);
    if (!terms) return (refuse("unsupported_scheme_or_network"), null);
    const s = decodeSessionPayment(payment);
    if (!s) return (refuse("invalid_payment_header"), null);
    const mismatch = sessionMismatch(s, { priceAtomic: price.atomic, terms });
    if (mismatch) return (refuse(mismatch.error, mismatch.extra), null);
    if (!(await voucherSigned(s))) return (refuse("invalid_payment", { reason: "invalid_voucher_signature" }), null);

    const now = ctx.clock.now();
    let channel = await ctx.stores.channels.get(s.voucher.channelId);
    const cumulative = s.voucher.maxClaimableAmount;
    // the last voucher charged on the channel, sent again: a dead request's (served free, once) or a replay (refused below)
    const retryOfLast =
      channel !== undefined && cumulative === channel.charged && channel.voucherSignature?.toLowerCase() === s.voucher.signature.toLowerCase();
    if (s.type === "deposit" && !retryOfLast) {
      // the deposit's ERC-3009 authorization is checked on chain by the facilitator before anything is locked
      const verification = await verifyPayment(deps.facilitator, s.payload as unknown as PaymentPayload, requirementsOf(deps, price));
      if (verification.refused) return (refuse("invalid_payment", { reason: reasonCode(verification.refused.reason), payer: s.config.payer }), null);
      const verified = verification.verified;
      if (!verified.isValid) return (refuse(reasonCode(verified.invalidReason) ?? "invalid_payment", { payer: s.config.payer }), null);
    } else if (s.type === "voucher") {
      if (!channel) return (refuse("session_channel_unknown", { payer: s.config.payer }), null);
      const stale = Date.parse(channel.syncedAt) + ctx.config.x402.sessions!.syncSeconds * 1000 < now.getTime() || channel.withdrawRequestedAt > 0;
      if (stale && !retryOfLast) {
        // the chain's word: a voucher it would not pay (after a withdrawal, say) is refused, not charged on what was remembered
        const refused = await syncChannel(ctx, deps.facilitator, s, requirementsOf(deps, price));
        if (refused) return (refuse(refused.refused, { payer: s.config.payer }), null);
        channel = await ctx.stores.channels.get(s.voucher.channelId);
      }
    }
    // a payer leaving (its withdrawal pending on chain) pays no more calls here: what it was charged is redeemed at once
    if (channel && channel.withdrawRequestedAt > 0 && !retryOfLast) return (refuse("session_withdrawal_pending", { payer: s.config.payer }), null);
    const charged = channel?.charged ?? 0n;
    if (cumulative !== charged + price.atomic && !retryOfLast) {
      // the client's base is not ours: tell it where the channel stands (the last voucher it signed), it signs again
      return (refuse(CUMULATIVE_MISMATCH, { payer: s.config.payer }, channel && channelState(channel)), null);
    }
    const balanceAfter = (channel?.balance ?? 0n) + (s.type === "deposit" && !retryOfLast ? s.deposit.amount : 0n);
    if (cumulative > balanceAfter) return (refuse("session_deposit_exceeded", { payer: s.config.payer, balance: balanceAfter.toString() }), null);

    const payer = s.config.payer;
    const nonce = `session:${s.voucher.channelId}:${cumulative}`;
    const holder = newHolder("pay");
    const locked = await ctx.tx.transaction(async () => {
      const lock = await ctx.stores.payments.lock({
        payer,
        nonce,
        route: `${route.method} ${route.path}`,
        amountAtomic: price.atomic,
        treasuryId: null,
        holder,
        now,
      });
      if (lock.kind === "busy" || lock.kind === "used") return lock;
      const treasury = lock.kind === "settled_unserved" && lock.treasuryId ? { treasuryId: lock.treasuryId, created: false } : await payerTreasury(ctx, payer);
      return { ...lock, ...treasury };
    });
    if (locked.kind === "used" || (retryOfLast && locked.kind === "locked")) {
      await (locked.kind === "locked" ? ctx.stores.payments.release(payer, nonce, holder) : undefined);
      return (refuse(CUMULATIVE_MISMATCH, { payer }, channel && channelState(channel)), null);
    }
    if (locked.kind === "busy") {
      throw new TreasuryError(
        "payment_in_progress",
        "this voucher is being served by another request; retry after Retry-After seconds with the same voucher (it is charged at most once)",
        { payer, retry_after_seconds: 1 },
        { "Retry-After": "1" },
      );
    }
    const credential: Credential = { kind: "x402", scope: `payer:${payer.toLowerCase()}`, treasuryId: locked.treasuryId, subject: payer };
    res.locals.credential = credential;
    res.setHeader("X-Treasury-Id", locked.treasuryId);
    return sessionClaim(
      ctx,
      { facilitator: deps.facilitator, knownPayers: deps.knownPayers, requirements: requirementsOf(deps, price) },
      {
        session: s,
        price: price.atomic,
        nonce,
        holder,
        treasuryId: locked.treasuryId,
        created: locked.created,
        takenOver: locked.kind === "locked" && locked.takenOver,
        alreadySettled: locked.kind === "settled_unserved" ? { transaction: locked.transactionHash ?? "" } : undefined,
      },
      { res, refuse },
    );
  };
}
