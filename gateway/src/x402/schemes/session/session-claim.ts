/**
 * A locked session payment charged (the template, payment-claim.ts, keeps its lock and releases it). A voucher
 * is charged here, not on chain: the channel's `charged` moves to the voucher's cumulative amount by one
 * conditional UPDATE in the same transaction that marks the payment settled, so an answered call is always a
 * charged voucher and a charged voucher is never charged again, on any instance. A deposit is first settled on
 * chain by the facilitator (an unknown outcome is kept pending, as for `exact`), then its first voucher is
 * charged the same way. A lock-free voucher (one on the channel's next amount: nothing was locked) is charged
 * and its payment's row written, settled and (a read) answered, in one transaction: its charge is its only write.
 */
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import type { ChannelRecord } from "../../../store/channel-store";
import { PAYMENT_HEADERS, toHeaderJson, X402_NETWORK_V2 } from "../../payment-match";
import { settleOnce } from "../../settlement";
import type { LockedPayment, SchemeEnv, SchemeSettlement } from "../scheme";
import { readChannel } from "./channel-sync";
import type { SessionPayment } from "./voucher";

/** what a session's settlement needs: the payment, and its requirements as the facilitator gets them */
export interface SessionSettling {
  s: SessionPayment;
  requirements: PaymentRequirements;
}

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

/** the settlement header of a charged voucher: the commitment (or the deposit's transaction), the charge, the channel */
export const sessionSettled = (_env: unknown, locked: LockedPayment<SessionSettling>, transaction: string, c: ChannelRecord | undefined) => ({
  [PAYMENT_HEADERS[2].response]: toHeaderJson({
    success: true,
    transaction,
    network: X402_NETWORK_V2,
    payer: locked.settling.s.config.payer,
    extra: { chargedAmount: locked.price.atomic.toString(), ...(c ? { channelState: channelState(c).channelState } : {}) },
  }),
});

/** charge the voucher and settle the payment, in one transaction */
export const chargeVoucher = (env: Pick<SchemeEnv, "ctx">, locked: LockedPayment<SessionSettling>, transaction: string) => {
  const { ctx } = env;
  const { s } = locked.settling;
  const cumulative = s.voucher.maxClaimableAmount;
  return ctx.tx.transaction(async () => {
    const outcome = await ctx.stores.channels.charge(
      s.voucher.channelId,
      { from: cumulative - locked.price.atomic, to: cumulative, signature: s.voucher.signature },
      ctx.clock.now(),
    );
    if (outcome.kind === "charged")
      await ctx.stores.payments.settled(locked.payer, locked.nonce, transaction, locked.treasuryId, ctx.clock.now().toISOString());
    return outcome;
  });
};

/**
 * charge a lock-free voucher and record its payment, settled (and answered: its outcome), in ONE transaction
 * (store/channel-store.ts `chargeVoucher`); a payment recorded already (the same voucher, another request) is stale
 */
const chargeLockFree = async (env: Pick<SchemeEnv, "ctx">, locked: LockedPayment<SessionSettling>, transaction: string, answered: number | undefined) => {
  const { ctx } = env;
  const { s } = locked.settling;
  const cumulative = s.voucher.maxClaimableAmount;
  const outcome = await ctx.stores.channels.chargeVoucher(
    s.voucher.channelId,
    { from: cumulative - locked.price.atomic, to: cumulative, signature: s.voucher.signature },
    {
      payer: locked.payer,
      nonce: locked.nonce,
      route: `${locked.route.method} ${locked.route.path}`,
      amountAtomic: locked.price.atomic,
      treasuryId: locked.treasuryId,
      transaction,
      status: answered,
      holder: locked.holder,
    },
    ctx.clock.now(),
  );
  return outcome.kind === "used" ? { kind: "stale" as const, channel: await ctx.stores.channels.get(s.voucher.channelId) } : outcome;
};

export async function settleSession(env: SchemeEnv, locked: LockedPayment<SessionSettling>, answered?: number): Promise<SchemeSettlement> {
  const { ctx, facilitator } = env;
  const { s, requirements } = locked.settling;
  const payer = s.config.payer;
  /** the commitment a charged voucher is: its channel and cumulative amount (value moves at redemption) */
  let transaction = `${s.voucher.channelId}:${s.voucher.maxClaimableAmount}`;
  if (s.type === "deposit") {
    const outcome = await settleOnce(facilitator, s.payload as unknown as PaymentPayload, requirements);
    if (outcome.kind === "unknown") return { kind: "unknown", settlement: JSON.stringify({ payment: s.payload, requirements }) };
    if (outcome.kind === "failed") return { kind: "failed", refusal: { error: "settlement_failed", extra: { reason: outcome.reason, payer } } };
    transaction = outcome.transaction;
    // the channel as the chain has it now, the deposit in (a withdrawal pending on it refuses the call below)
    const read = await readChannel(facilitator, s, requirements);
    const known = await ctx.stores.channels.get(s.voucher.channelId);
    const chain =
      read.kind === "read"
        ? read.chain
        : { balance: (known?.balance ?? 0n) + s.deposit.amount, totalClaimed: known?.totalClaimed ?? 0n, withdrawRequestedAt: known?.withdrawRequestedAt ?? 0 };
    // not read: recorded as never synced, so the channel's next voucher reads the chain before it is charged
    await ctx.stores.channels.sync(
      { channelId: s.voucher.channelId, payer, config: { ...s.config } },
      chain,
      read.kind === "read" ? ctx.clock.now() : new Date(0),
    );
    if (chain.withdrawRequestedAt > 0) return { kind: "failed", refusal: { error: "session_withdrawal_pending", extra: { payer } } };
  }
  const outcome = locked.lockFree ? await chargeLockFree(env, locked, transaction, answered) : await chargeVoucher(env, locked, transaction);
  if (outcome.kind === "over_balance") return { kind: "failed", refusal: { error: "session_deposit_exceeded", extra: { payer } } };
  if (outcome.kind !== "charged") {
    const state = outcome.channel && channelState(outcome.channel);
    return { kind: "failed", refusal: { error: "invalid_batch_settlement_evm_cumulative_amount_mismatch", extra: { payer }, ...(state ? { state } : {}) } };
  }
  return { kind: "settled", headers: sessionSettled(env, locked, transaction, outcome.channel) };
}
