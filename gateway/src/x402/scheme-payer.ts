/**
 * Who signed a session voucher or an `upto` authorization, for the rate limit's identity (payment-gate.ts
 * `provenPayer`): checked here without the facilitator. A voucher names its channel's payer only when the
 * channel is one this service holds (its id binds the payer and the voucher signer; a deposit it settled
 * made it); an `upto` authorization's payer is the Permit2 signature's signer.
 */
import { PERMIT2_ADDRESS, uptoPermit2WitnessTypes } from "@x402/evm";
import { getAddress, hashTypedData } from "viem";
import { recoverHashSigner } from "../lib/recover-signer";
import type { ChannelStore } from "../store/channel-store";
import { X402_CHAIN_ID, type PaymentPayloadV2 } from "./payment-match";
import { channelIdOf, decodeSessionPayment, isSessionPayment, voucherSigned } from "./sessions/voucher";
import { decodeUptoAuthorization, isUptoPayment } from "./upto/permit";

/** the payer (lower-case) whose signature a session or upto payment carries, null when it is not signed by one, undefined for other schemes */
export async function schemePayer(raw: unknown, channels: ChannelStore): Promise<string | null | undefined> {
  if (isSessionPayment(raw)) {
    const s = decodeSessionPayment(raw);
    if (!s || channelIdOf(s.config) !== s.voucher.channelId) return null;
    if (!(await voucherSigned(s)) || !(await channels.get(s.voucher.channelId))) return null;
    return s.config.payer.toLowerCase();
  }
  if (isUptoPayment(raw)) return uptoSigner(raw);
  return undefined;
}

async function uptoSigner(payment: PaymentPayloadV2): Promise<string | null> {
  const a = decodeUptoAuthorization(payment);
  if (!a) return null;
  try {
    // recovered natively (lib/recover-signer.ts), as a voucher's signer is
    const hash = hashTypedData({
      domain: { name: "Permit2", chainId: X402_CHAIN_ID, verifyingContract: getAddress(PERMIT2_ADDRESS) },
      types: uptoPermit2WitnessTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: {
        permitted: { token: a.token, amount: a.maximum },
        spender: a.spender,
        nonce: BigInt(a.nonce),
        deadline: a.deadline,
        witness: { to: a.to, facilitator: a.facilitator, validAfter: a.validAfter },
      },
    });
    const signer = await recoverHashSigner(hash, (payment.payload as { signature: `0x${string}` }).signature);
    return signer.toLowerCase() === a.from.toLowerCase() ? a.from.toLowerCase() : null;
  } catch {
    return null;
  }
}
