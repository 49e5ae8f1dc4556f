/**
 * A locked session payment of one request (session-authorize.ts makes it): charged once, or released. A
 * voucher is charged here, not on chain: the channel's `charged` moves to the voucher's cumulative amount in
 * the same transaction that marks the payment settled, so an answered call is always a charged voucher and a
 * charged voucher is never charged again. A deposit is first settled on chain by the facilitator (an unknown
 * outcome is kept pending, as for `exact`), then its first voucher is charged the same way.
 */
import type { Response } from "express";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import type { ChannelRecord } from "../../../store/channel-store";
import type { FacilitatorClient } from "../../facilitator-client";
import type { KnownPayers } from "../../known-payers";
import type { PaymentClaim } from "../../payment-claim";
import { PAYMENT_HEADERS, toHeaderJson, X402_NETWORK_V2 } from "../../payment-match";
import { settleOnce, settlementUnknown } from "../../settlement";
import type { PaymentGateContext } from "../../gate-context";
import { readChannel } from "./channel-sync";
import type { SessionPayment } from "./voucher";

/** the channel as the scheme's client reads it (a corrective 402's `channelState` and `voucherState`) */
export const channelState = (c: ChannelRecord) => ({
  channelState: {
    channelId: c.channelId,
    balance: c.balance.toString(),
    totalClaimed: c.totalClaimed.toString(),
    withdrawRequestedAt: c.withdrawRequestedAt,
    refundNonce: "0",
    chargedCumulativeAmount: c.charged.toString(),
  },
  voucherState: c.voucherSignature ? { signedMaxClaimable: c.charged.toString(), signature: c.voucherSignature } : {},
});

export type SessionContext = Pick<PaymentGateContext, "config" | "clock" | "tx" | "stores">;

export interface LockedSession {
  session: SessionPayment;
  price: bigint;
  nonce: string;
  holder: string;
  treasuryId: string;
  created: boolean;
  takenOver: boolean;
  alreadySettled?: { transaction: string };
}

export function sessionClaim(
  ctx: SessionContext,
  deps: { facilitator: FacilitatorClient; knownPayers: KnownPayers; requirements: PaymentRequirements },
  locked: LockedSession,
  answer: { res: Response; refuse(error: string, extra?: Record<string, unknown>, state?: Record<string, unknown>): void },
): PaymentClaim {
  const { session: s, nonce, holder, treasuryId, created, takenOver, alreadySettled } = locked;
  const payer = s.config.payer;
  const payments = ctx.stores.payments;
  const cumulative = s.voucher.maxClaimableAmount;
  /** the commitment a charged voucher is: its channel and cumulative amount (value moves at redemption) */
  const commitment = `${s.voucher.channelId}:${cumulative}`;
  const respond = (transaction: string, c: ChannelRecord | undefined) =>
    answer.res.setHeader(
      PAYMENT_HEADERS[2].response,
      toHeaderJson({
        success: true,
        transaction,
        network: X402_NETWORK_V2,
        payer,
        extra: { chargedAmount: locked.price.toString(), ...(c ? { channelState: channelState(c).channelState } : {}) },
      }),
    );

  let done = false;
  const release = async () => {
    if (done) return;
    done = true;
    if (alreadySettled || takenOver) return payments.lapse(payer, nonce, holder, ctx.clock.now());
    await ctx.tx.transaction(async () => {
      await payments.release(payer, nonce, holder);
      if (created) await ctx.stores.treasuries.removeUnused(treasuryId);
    });
  };
  const forget = () => {
    answer.res.locals.credential = undefined;
    answer.res.removeHeader("X-Treasury-Id");
  };
  /** charge the voucher and settle the payment, in one transaction */
  const charge = async (transaction: string) =>
    ctx.tx.transaction(async () => {
      const outcome = await ctx.stores.channels.charge(
        s.voucher.channelId,
        { from: cumulative - locked.price, to: cumulative, signature: s.voucher.signature },
        ctx.clock.now(),
      );
      if (outcome.kind === "charged") await payments.settled(payer, nonce, transaction, treasuryId, ctx.clock.now().toISOString());
      return outcome;
    });

  return {
    payer,
    nonce,
    treasuryId,
    release,
    renew: async () => await payments.renew(payer, nonce, holder, ctx.clock.now()),
    outcome: async (status) => await payments.outcome(payer, nonce, status),
    settle: async () => {
      if (done) throw new Error("payment already settled or released");
      if (alreadySettled) {
        done = true;
        respond(alreadySettled.transaction, await ctx.stores.channels.get(s.voucher.channelId));
        return true;
      }
      let transaction = commitment;
      if (s.type === "deposit") {
        const outcome = await settleOnce(deps.facilitator, s.payload as unknown as PaymentPayload, deps.requirements);
        if (outcome.kind === "unknown") {
          done = true;
          await payments.pending(payer, nonce, holder, JSON.stringify({ payment: s.payload, requirements: deps.requirements }), ctx.clock.now());
          forget();
          throw settlementUnknown(payer);
        }
        if (outcome.kind === "failed") {
          await release();
          forget();
          answer.refuse("settlement_failed", { reason: outcome.reason, payer });
          return false;
        }
        transaction = outcome.transaction;
        // the channel as the chain has it now, the deposit in (a withdrawal pending on it refuses the call below)
        const read = await readChannel(deps.facilitator, s, deps.requirements);
        const known = await ctx.stores.channels.get(s.voucher.channelId);
        const chain =
          read.kind === "read"
            ? read.chain
            : {
                balance: (known?.balance ?? 0n) + s.deposit.amount,
                totalClaimed: known?.totalClaimed ?? 0n,
                withdrawRequestedAt: known?.withdrawRequestedAt ?? 0,
              };
        // not read: recorded as never synced, so the channel's next voucher reads the chain before it is charged
        await ctx.stores.channels.sync(
          { channelId: s.voucher.channelId, payer, config: { ...s.config } },
          chain,
          read.kind === "read" ? ctx.clock.now() : new Date(0),
        );
        if (chain.withdrawRequestedAt > 0) {
          await release();
          forget();
          answer.refuse("session_withdrawal_pending", { payer });
          return false;
        }
      }
      const outcome = await charge(transaction);
      if (outcome.kind !== "charged") {
        await release();
        forget();
        if (outcome.kind === "over_balance") answer.refuse("session_deposit_exceeded", { payer });
        else answer.refuse("invalid_batch_settlement_evm_cumulative_amount_mismatch", { payer }, outcome.channel && channelState(outcome.channel));
        return false;
      }
      done = true;
      deps.knownPayers.add(payer);
      respond(transaction, outcome.channel);
      return true;
    },
  };
}
