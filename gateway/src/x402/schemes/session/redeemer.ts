/**
 * Vouchers charged in sessions, redeemed on chain in batches. When the batch policy says so (this many
 * unredeemed vouchers, this amount, the oldest this old, or a payer's withdrawal pending), one redeemer
 * leases the channels with unredeemed vouchers (a lease per channel: instances never claim one channel at
 * once), records the batch, and has the facilitator claim each channel's latest voucher in one transaction
 * (`claimWithSignature`, signed by the receiver authorizer) and then settle the claimed funds to the payTo.
 *
 * A claim is idempotent on chain (a channel's claimed total only rises, to at most what its payer signed),
 * so a batch whose outcome is unknown (the facilitator did not answer, the instance died) is reconciled by
 * reading each channel's claimed total back; what the chain has not claimed is claimed by the next batch.
 * Vouchers are in the store before their call is answered: an instance killed between answering and
 * redeeming loses none, whichever instance redeems them.
 */
import { newId } from "@treasury/core/lib/ids";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import type { SessionConfig } from "../../../config";
import type { Clock } from "../../../lib/clock";
import type { ChannelRecord, ChannelStore } from "../../../store/channel-store";
import { LEASE_MS, newHolder } from "../../../store/lease";
import type { FacilitatorClient } from "../../facilitator-client";
import { X402_NETWORK_V2 } from "../../payment-match";
import { BATCH_SETTLEMENT_SCHEME } from "./voucher";

/** at most this many channels in one claim transaction */
export const MAX_CLAIMS_PER_BATCH = 50;
/** a channel whose own claim the chain refused is tried again after this long (the others are not held up) */
export const HOLD_BACK_MS = 10 * 60_000;

export interface RedemptionResult {
  channels: number;
  vouchers: number;
  amount: bigint;
  claimTx?: string;
  settleTx?: string;
  failed?: string;
}

export class SessionRedeemer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: { clock: Clock; stores: { channels: ChannelStore } },
    private readonly facilitator: FacilitatorClient,
    private readonly terms: { payTo: `0x${string}`; asset: `0x${string}`; policy: SessionConfig["redeem"] },
  ) {}

  /** the requirements of the receiver's own operations (claim, settle): no price */
  private requirements(): PaymentRequirements {
    return {
      scheme: BATCH_SETTLEMENT_SCHEME,
      network: X402_NETWORK_V2,
      asset: this.terms.asset,
      amount: "0",
      payTo: this.terms.payTo,
      maxTimeoutSeconds: 0,
      extra: {},
    } as unknown as PaymentRequirements;
  }

  private async call(payload: Record<string, unknown>): Promise<{ ok: true; transaction: string } | { ok: false; reason: string }> {
    const requirements = this.requirements();
    const payment = { x402Version: 2, accepted: requirements, payload } as unknown as PaymentPayload;
    try {
      const r = await this.facilitator.settle(payment, requirements);
      return r.success ? { ok: true, transaction: r.transaction } : { ok: false, reason: r.errorReason ?? "refused" };
    } catch (err) {
      return { ok: false, reason: (err as { errorReason?: string }).errorReason ?? (err instanceof Error ? err.message : String(err)) };
    }
  }

  /** does the batch policy call for a redemption now? */
  async due(): Promise<boolean> {
    const u = await this.ctx.stores.channels.unredeemed();
    const { policy } = this.terms;
    if (u.vouchers === 0) return false;
    const age = u.oldest ? this.ctx.clock.now().getTime() - Date.parse(u.oldest) : 0;
    return u.vouchers >= policy.vouchers || u.amount >= policy.amount || age >= policy.maxAgeSeconds * 1000 || u.withdrawing;
  }

  /** what the chain has claimed on a channel, read through the facilitator's verification of its latest voucher */
  private async claimedOnChain(c: ChannelRecord): Promise<bigint | undefined> {
    const requirements = { ...this.requirements(), amount: "0" };
    const payload = {
      type: "voucher",
      channelConfig: c.config,
      voucher: { channelId: c.channelId, maxClaimableAmount: c.charged.toString(), signature: c.voucherSignature },
    };
    try {
      const r = await this.facilitator.verify({ x402Version: 2, accepted: requirements, payload } as unknown as PaymentPayload, requirements);
      const claimed = (r as { extra?: { totalClaimed?: unknown } }).extra?.totalClaimed;
      return typeof claimed === "string" && /^\d+$/.test(claimed) ? BigInt(claimed) : undefined;
    } catch {
      return undefined;
    }
  }

  /** one batch: lease, record, claim, settle; undefined when nothing is unredeemed or another redeemer holds it all */
  async redeem(): Promise<RedemptionResult | undefined> {
    const { channels } = this.ctx.stores;
    const holder = newHolder("rdm");
    const leased = (await channels.leaseUnredeemed(holder, MAX_CLAIMS_PER_BATCH, this.ctx.clock.now(), LEASE_MS)).filter((c) => c.voucherSignature);
    if (leased.length === 0) return undefined;
    const id = newId("rdm");
    const amount = leased.reduce((a, c) => a + (c.charged - c.totalClaimed), 0n);
    const vouchers = leased.reduce((n, c) => n + c.vouchersUnredeemed, 0);
    await channels.recordRedemption(
      { id, holder, claims: leased.map((c) => ({ channel_id: c.channelId, amount: c.charged.toString() })), amount },
      this.ctx.clock.now(),
    );
    const claimOf = (c: ChannelRecord) => ({
      voucher: { channel: c.config, maxClaimableAmount: c.charged.toString() },
      signature: c.voucherSignature,
      totalClaimed: c.charged.toString(),
    });
    let claimed = await this.call({ type: "claim", claims: leased.map(claimOf) });
    let redeemedChannels = claimed.ok ? leased : [];
    if (!claimed.ok) {
      // the outcome may be unknown, or part of it claimed already: the chain says what is claimed; the rest is
      // claimed channel by channel, so one channel the chain refuses (its payer withdrew, say) holds up no other
      const reason = claimed.reason;
      const left: ChannelRecord[] = [];
      for (const c of leased) {
        const onChain = await this.claimedOnChain(c);
        if (onChain !== undefined && onChain >= c.charged) await channels.redeemed(c.channelId, holder, onChain, c.vouchersUnredeemed, this.ctx.clock.now());
        else left.push(c);
      }
      const transactions: string[] = [];
      for (const c of left) {
        const one = leased.length > 1 ? await this.call({ type: "claim", claims: [claimOf(c)] }) : claimed;
        if (one.ok) {
          transactions.push(one.transaction);
          redeemedChannels = [...redeemedChannels, c];
        } else await channels.holdBack(c.channelId, holder, new Date(this.ctx.clock.now().getTime() + HOLD_BACK_MS));
      }
      claimed = transactions.length > 0 ? { ok: true, transaction: transactions.join(",") } : { ok: false, reason };
      if (!claimed.ok) {
        await channels.redemptionState(id, "failed", { reason: reason.slice(0, 200) }, this.ctx.clock.now());
        return { channels: leased.length, vouchers, amount, failed: reason };
      }
    }
    for (const c of redeemedChannels) await channels.redeemed(c.channelId, holder, c.charged, c.vouchersUnredeemed, this.ctx.clock.now(), claimed.transaction);
    await channels.redemptionState(id, "claimed", { claimTx: claimed.transaction }, this.ctx.clock.now());
    // the claimed funds to the receiver (anyone may call it; a second call finds nothing to settle)
    const settled = await this.call({ type: "settle", receiver: this.terms.payTo, token: this.terms.asset });
    if (settled.ok) await channels.redemptionState(id, "settled", { settleTx: settled.transaction }, this.ctx.clock.now());
    return { channels: leased.length, vouchers, amount, claimTx: claimed.transaction, ...(settled.ok ? { settleTx: settled.transaction } : {}) };
  }

  /** redeem every due batch, one at a time in this process */
  tick(): Promise<unknown> {
    this.running = this.running
      .catch(() => undefined)
      .then(async () => {
        while (await this.due()) {
          const r = await this.redeem();
          if (!r || r.failed) break;
        }
      });
    return this.running;
  }

  start(everyMs: number, onError: (err: unknown) => void): void {
    this.timer ??= setInterval(() => void this.tick().catch(onError), everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running.catch(() => undefined);
  }
}
