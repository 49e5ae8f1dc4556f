/**
 * A channel's state as the chain says it (balance, claimed total, a pending withdrawal), read through the
 * facilitator's verification of a voucher on it (the facilitator reads the contract). Its refusal is the
 * chain's word too: a voucher the chain would not pay (above what is left after a withdrawal, a channel
 * gone) is refused, never charged on the state the gateway remembered.
 */
import { TreasuryError } from "@treasury/core/lib/errors";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import type { ChainChannel, ChannelStore } from "../../../store/channel-store";
import { verifyPayment, type FacilitatorClient } from "../../facilitator-client";
import { reasonCode } from "../../settlement";
import type { SessionPayment } from "./voucher";

export type ChainRead = { kind: "read"; chain: ChainChannel } | { kind: "refused"; reason: string } | { kind: "unknown" };

/** the voucher's channel on chain, as the facilitator's verification of the voucher reads it */
export async function readChannel(facilitator: FacilitatorClient, s: SessionPayment, requirements: PaymentRequirements): Promise<ChainRead> {
  // a deposit's voucher alone: its channel as it stands (with the deposit, once it is made)
  const voucher = {
    ...s.payload,
    payload: {
      type: "voucher",
      channelConfig: (s.payload.payload as { channelConfig: unknown }).channelConfig,
      voucher: (s.payload.payload as { voucher: unknown }).voucher,
    },
  };
  // the facilitator's 4xx is its refusal of the voucher; no answer is an outage (unknown)
  const verification = await verifyPayment(facilitator, voucher as unknown as PaymentPayload, requirements).catch(() => undefined);
  if (!verification) return { kind: "unknown" };
  if (verification.refused) return { kind: "refused", reason: reasonCode(verification.refused.reason) ?? "invalid_payment" };
  const verified = verification.verified;
  if (!verified.isValid) return { kind: "refused", reason: reasonCode(verified.invalidReason) ?? "invalid_payment" };
  const extra = (verified as { extra?: Record<string, unknown> }).extra;
  const uint = (v: unknown) => (typeof v === "string" && /^\d+$/.test(v) ? BigInt(v) : undefined);
  const balance = uint(extra?.balance);
  if (balance === undefined) return { kind: "unknown" };
  return { kind: "read", chain: { balance, totalClaimed: uint(extra?.totalClaimed) ?? 0n, withdrawRequestedAt: Number(extra?.withdrawRequestedAt ?? 0) } };
}

/** read the channel and record it; the chain's refusal is answered as a refusal, an unanswered read as 503 */
export async function syncChannel(
  ctx: { clock: { now(): Date }; stores: { channels: ChannelStore } },
  facilitator: FacilitatorClient,
  s: SessionPayment,
  requirements: PaymentRequirements,
): Promise<{ refused: string } | undefined> {
  const read = await readChannel(facilitator, s, requirements);
  if (read.kind === "refused") return { refused: read.reason };
  if (read.kind === "unknown")
    throw new TreasuryError(
      "payment_facilitator_unavailable",
      "the x402 facilitator could not read the session's channel; retry later (nothing was charged)",
      {},
      { "Retry-After": "5" },
    );
  await ctx.stores.channels.sync({ channelId: s.voucher.channelId, payer: s.config.payer, config: { ...s.config } }, read.chain, ctx.clock.now());
  return undefined;
}
