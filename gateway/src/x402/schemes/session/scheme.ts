/**
 * x402 sessions (`batch-settlement`), with the guarantees of an `exact` payment: matched to this route and this
 * service's channel terms, the voucher's signature checked here (no facilitator call while the channel's
 * on-chain state is fresh), its payment named (payer, `session:<channel>:<cumulative amount>`), the payer's
 * treasury resolved by the one template (authorize.ts); charged by session-claim.ts. A deposit, and a voucher
 * sent again, is locked under a lease first; a voucher on the channel's next amount is lock-free: its charge
 * is its only write.
 *
 * A voucher's cumulative amount must be exactly what this service has charged on the channel plus this
 * call's price. Anything else is answered with the scheme's corrective 402 (the channel's state here and the
 * last voucher the payer signed, so the official client resynchronises and signs again), or refused: a
 * voucher above the deposit, one whose signature is not the channel's payer authorizer's, a channel this
 * service never saw a deposit for.
 *
 * Valid now (the rate limit's identity): it matches this route and this service's terms, its voucher is
 * signed by the channel's payer authorizer, the channel is one this service holds with no withdrawal pending,
 * and its cumulative amount is exactly what the channel was charged plus this route's price, within the
 * balance (a charged voucher is never above what was charged: it never matches again).
 */
import { getAddress } from "viem";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { verifyPayment } from "../../facilitator-client";
import type { PaymentPayloadV2 } from "../../payment-match";
import type { RoutePrice } from "../../prices";
import { reasonCode } from "../../settlement";
import type { PaymentScheme, Refusal, SchemeEnv } from "../scheme";
import { syncChannel } from "./channel-sync";
import { channelState, sessionSettled, settleSession, type SessionSettling } from "./session-claim";
import {
  BATCH_SETTLEMENT_SCHEME,
  channelIdOf,
  decodeSessionPayment,
  isSessionPayment,
  sessionMismatch,
  sessionRequirements,
  voucherSigned,
  type SessionPayment,
  type SessionTerms,
} from "./voucher";

/** the scheme's own reason for a voucher whose base is not the server's (its client recovers from it) */
export const CUMULATIVE_MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

/** this service's channel terms, when sessions are offered */
export const sessionTerms = (env: Pick<SchemeEnv, "ctx" | "opts" | "requirements">): SessionTerms | undefined => {
  const sessions = env.ctx.config.x402.sessions;
  return (
    sessions && {
      payTo: env.requirements.payTo,
      receiverAuthorizer: sessions.receiverAuthorizer,
      asset: getAddress(env.opts.asset.address),
      withdrawDelaySeconds: sessions.withdrawDelaySeconds,
    }
  );
};

/** the session offer of a route: the price of a call, the channel's terms, and (a corrective 402) the channel's state here */
const offersOf = (env: SchemeEnv, price: RoutePrice, state?: Record<string, unknown>) => {
  const terms = sessionTerms(env);
  if (!terms) return [];
  const r = sessionRequirements({ priceAtomic: price.atomic, maxTimeoutSeconds: env.ctx.config.x402.maxTimeoutSeconds, asset: env.opts.asset }, terms);
  return [{ ...r, extra: { ...r.extra, ...state } }];
};

/** the session's requirements as the facilitator gets them (this route's price, this service's terms) */
const requirementsOf = (env: SchemeEnv, price: RoutePrice) => offersOf(env, price)[0] as unknown as PaymentRequirements;

export const sessionScheme: PaymentScheme<SessionPayment, SessionSettling> = {
  name: BATCH_SETTLEMENT_SCHEME,
  recognizes: (sent) => isSessionPayment(sent.raw),
  decode: (sent) => decodeSessionPayment(sent.raw as unknown as PaymentPayloadV2),
  offers: offersOf,
  match: (env, s, at) => sessionMismatch(s, { priceAtomic: at.price.atomic, terms: sessionTerms(env)! }),
  async verify(env, s, at): Promise<Refusal | Awaited<ReturnType<typeof verified>>> {
    const { ctx } = env;
    const { price } = at;
    if (!(await voucherSigned(s))) return { error: "invalid_payment", extra: { reason: "invalid_voucher_signature" } };
    const payer = s.config.payer;
    const now = ctx.clock.now();
    let channel = await ctx.stores.channels.get(s.voucher.channelId);
    const cumulative = s.voucher.maxClaimableAmount;
    // the last voucher charged on the channel, sent again: a dead request's (served free, once) or a replay (refused)
    const retryOfLast =
      channel !== undefined && cumulative === channel.charged && channel.voucherSignature?.toLowerCase() === s.voucher.signature.toLowerCase();
    if (s.type === "deposit" && !retryOfLast) {
      // the deposit's ERC-3009 authorization is checked on chain by the facilitator before anything is locked
      const verification = await verifyPayment(env.facilitator, s.payload as unknown as PaymentPayload, requirementsOf(env, price));
      if (verification.refused) return { error: "invalid_payment", extra: { reason: reasonCode(verification.refused.reason), payer } };
      if (!verification.verified.isValid) return { error: reasonCode(verification.verified.invalidReason) ?? "invalid_payment", extra: { payer } };
    } else if (s.type === "voucher") {
      if (!channel) return { error: "session_channel_unknown", extra: { payer } };
      const stale = Date.parse(channel.syncedAt) + ctx.config.x402.sessions!.syncSeconds * 1000 < now.getTime() || channel.withdrawRequestedAt > 0;
      if (stale && !retryOfLast) {
        // the chain's word: a voucher it would not pay (after a withdrawal, say) is refused, not charged on what was remembered
        const refused = await syncChannel(ctx, env.facilitator, s, requirementsOf(env, price));
        if (refused) return { error: refused.refused, extra: { payer } };
        channel = await ctx.stores.channels.get(s.voucher.channelId);
      }
    }
    // a payer leaving (its withdrawal pending on chain) pays no more calls here: what it was charged is redeemed at once
    if (channel && channel.withdrawRequestedAt > 0 && !retryOfLast) return { error: "session_withdrawal_pending", extra: { payer } };
    const charged = channel?.charged ?? 0n;
    // the client's base is not ours: tell it where the channel stands (the last voucher it signed), it signs again
    const mismatch: Refusal = { error: CUMULATIVE_MISMATCH, extra: { payer }, ...(channel ? { state: channelState(channel) } : {}) };
    if (cumulative !== charged + price.atomic && !retryOfLast) return mismatch;
    const balanceAfter = (channel?.balance ?? 0n) + (s.type === "deposit" && !retryOfLast ? s.deposit.amount : 0n);
    if (cumulative > balanceAfter) return { error: "session_deposit_exceeded", extra: { payer, balance: balanceAfter.toString() } };
    return verified(env, s, price, mismatch, retryOfLast);
  },
  async payer(_env, s) {
    if (channelIdOf(s.config) !== s.voucher.channelId || !(await voucherSigned(s))) return undefined;
    return s.config.payer.toLowerCase();
  },
  async validNow(env, s, at) {
    const terms = sessionTerms(env);
    if (!terms || sessionMismatch(s, { priceAtomic: at.price.atomic, terms }) || !(await voucherSigned(s))) return null;
    const channel = await env.ctx.stores.channels.get(s.voucher.channelId);
    if (!channel || channel.withdrawRequestedAt > 0) return null;
    const cumulative = s.voucher.maxClaimableAmount;
    const balance = channel.balance + (s.type === "deposit" ? s.deposit.amount : 0n);
    return cumulative === channel.charged + at.price.atomic && cumulative <= balance ? s.config.payer.toLowerCase() : null;
  },
  settle: (env, locked, _used, answered) => settleSession(env, locked, answered),
  settledAgain: async (env, locked, transaction) =>
    sessionSettled(env, locked, transaction, await env.ctx.stores.channels.get(locked.settling.s.voucher.channelId)),
};

/** a voucher verified: locked as its channel and cumulative amount; a replay of the last one is served only as a dead request's */
const verified = (env: SchemeEnv, s: SessionPayment, price: RoutePrice, mismatch: Refusal, retryOfLast: boolean) => ({
  payer: s.config.payer,
  nonce: `session:${s.voucher.channelId}:${s.voucher.maxClaimableAmount}`,
  settling: { s, requirements: requirementsOf(env, price) },
  usedRefusal: mismatch,
  ...(retryOfLast ? { onlyServedSettled: mismatch } : {}),
  // a voucher on the channel's next amount holds nothing before its charge: the charge, the payment's row and (a
  // read) its outcome are one transaction (session-claim.ts), which one request alone commits
  ...(s.type === "voucher" && !retryOfLast ? { lockFree: true } : {}),
});
