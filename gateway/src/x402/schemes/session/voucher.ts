/**
 * The pure half of x402 sessions (`batch-settlement`, EVM): decode a session payment (a deposit with its first
 * voucher, or a voucher alone), check that its channel is one this service offers (receiver, receiver
 * authorizer, token, withdraw delay, the id bound to the configuration), and check the voucher's signature
 * by the channel's payer authorizer. No I/O; the charge itself is store/channel-store.ts's.
 */
import { BATCH_SETTLEMENT_SCHEME } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { getAddress, type Hex } from "viem";
import { recoverHashSigner } from "../../../lib/recover-signer";
import { X402_NETWORK_V2, type PaymentPayloadV2 } from "../../payment-match";
import { SessionProof } from "../../payment-schemas";
import { voucherDigest } from "./voucher-digest";

export { BATCH_SETTLEMENT_SCHEME };

export interface ChannelConfig {
  payer: `0x${string}`;
  payerAuthorizer: `0x${string}`;
  receiver: `0x${string}`;
  receiverAuthorizer: `0x${string}`;
  token: `0x${string}`;
  withdrawDelay: number;
  salt: Hex;
}

export interface SessionVoucher {
  channelId: Hex;
  maxClaimableAmount: bigint;
  signature: Hex;
}

export type SessionPayment =
  | { type: "voucher"; config: ChannelConfig; voucher: SessionVoucher; payload: PaymentPayloadV2 }
  | { type: "deposit"; config: ChannelConfig; voucher: SessionVoucher; deposit: { amount: bigint; salt: string }; payload: PaymentPayloadV2 };

/** what this service offers a channel: to whom, through which authorizer, in which token, with which delay */
export interface SessionTerms {
  payTo: `0x${string}`;
  receiverAuthorizer: `0x${string}`;
  asset: `0x${string}`;
  withdrawDelaySeconds: number;
}

/** at most this many checked vouchers and channel ids are remembered (the oldest are forgotten first) */
const CHECKED_KEPT = 10_000;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^\d{1,39}$/;
/** a 65-byte ECDSA signature (r, s, v): the contract verifies nothing else, so the gateway accepts nothing else */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
/** half the secp256k1 order: a signature with a higher s is the malleable twin the contract refuses (EIP-2) */
const HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
const lowS = (signature: string) => BigInt(`0x${signature.slice(66, 130)}`) <= HALF_ORDER;
/** v exactly 27 or 28: the contract on Base recovers with OpenZeppelin's ECDSA, which refuses 0/1 (such a voucher could never be claimed) */
const claimableV = (signature: string) => /(1b|1c)$/i.test(signature);

/** channel ids computed lately, by configuration (a channel's every voucher carries the same one) */
const channelIds = new Map<string, string>();

/** the channel id of a configuration (the EIP-712 hash of ChannelConfig in the scheme's domain on this chain), lower-case */
export function channelIdOf(config: ChannelConfig): string {
  const key = JSON.stringify(config);
  let id = channelIds.get(key);
  if (id === undefined) {
    id = computeChannelId(config, X402_NETWORK_V2).toLowerCase();
    if (channelIds.size >= CHECKED_KEPT) channelIds.delete(channelIds.keys().next().value!);
    channelIds.set(key, id);
  }
  return id;
}

/** is this decoded PAYMENT-SIGNATURE a session payment (whatever its content)? */
export const isSessionPayment = (payment: unknown): payment is PaymentPayloadV2 =>
  typeof payment === "object" &&
  payment !== null &&
  (payment as PaymentPayloadV2).x402Version === 2 &&
  (payment as PaymentPayloadV2).accepted?.scheme === BATCH_SETTLEMENT_SCHEME;

function voucherOf(raw: unknown): SessionVoucher | undefined {
  const v = raw as Record<string, unknown> | undefined;
  if (!v || typeof v !== "object") return undefined;
  if (typeof v.channelId !== "string" || !BYTES32.test(v.channelId)) return undefined;
  if (typeof v.maxClaimableAmount !== "string" || !UINT.test(v.maxClaimableAmount)) return undefined;
  if (typeof v.signature !== "string" || !SIGNATURE.test(v.signature) || !lowS(v.signature)) return undefined;
  return { channelId: v.channelId.toLowerCase() as Hex, maxClaimableAmount: BigInt(v.maxClaimableAmount), signature: v.signature as Hex };
}

/** the session payment a PAYMENT-SIGNATURE carries (its shape: payment-schemas.ts SessionProof), or undefined when it is malformed */
export function decodeSessionPayment(payment: PaymentPayloadV2): SessionPayment | undefined {
  const parsed = SessionProof.safeParse(payment);
  if (!parsed.success) return undefined;
  const p = parsed.data.payload;
  const voucher = voucherOf(p.voucher);
  if (!voucher) return undefined;
  const c = p.channelConfig;
  const config: ChannelConfig = {
    payer: getAddress(c.payer),
    payerAuthorizer: getAddress(c.payerAuthorizer),
    receiver: getAddress(c.receiver),
    receiverAuthorizer: getAddress(c.receiverAuthorizer),
    token: getAddress(c.token),
    withdrawDelay: c.withdrawDelay,
    salt: c.salt as Hex,
  };
  if (p.type === "voucher") return { type: "voucher", config, voucher, payload: payment };
  const deposit = { amount: BigInt(p.deposit.amount), salt: String(p.deposit.authorization.erc3009Authorization.salt) };
  return { type: "deposit", config, voucher, deposit, payload: payment };
}

/** why this session payment cannot pay this route under these terms, or null */
export function sessionMismatch(
  s: SessionPayment,
  route: { priceAtomic: bigint; terms: SessionTerms },
): { error: string; extra?: Record<string, unknown> } | null {
  const a = s.payload.accepted;
  const { terms } = route;
  const same = (x: unknown, y: string) => typeof x === "string" && ADDRESS.test(x) && x.toLowerCase() === y.toLowerCase();
  if (a.network !== X402_NETWORK_V2) return { error: "unsupported_scheme_or_network" };
  if (a.amount !== route.priceAtomic.toString())
    return { error: "payment_does_not_match_route", extra: { expected_amount: route.priceAtomic.toString(), received_amount: String(a.amount) } };
  if (!same(a.payTo, terms.payTo) || !same(s.config.receiver, terms.payTo)) return { error: "payment_recipient_mismatch" };
  if (!same(a.asset, terms.asset) || !same(s.config.token, terms.asset)) return { error: "payment_asset_mismatch" };
  if (!same(s.config.receiverAuthorizer, terms.receiverAuthorizer) || s.config.withdrawDelay !== terms.withdrawDelaySeconds)
    return { error: "session_terms_mismatch", extra: { receiver_authorizer: terms.receiverAuthorizer, withdraw_delay: terms.withdrawDelaySeconds } };
  // vouchers are checked here by their signer's key: a channel whose vouchers a contract wallet signs is not offered
  if (s.config.payerAuthorizer === "0x0000000000000000000000000000000000000000")
    return { error: "session_terms_mismatch", extra: { reason: "payer_authorizer_required" } };
  if (channelIdOf(s.config) !== s.voucher.channelId) return { error: "invalid_payment", extra: { reason: "channel_id_mismatch" } };
  return null;
}

/** vouchers whose signature was checked lately (the rate limit's identity and the payment's check see the same one) */
const checked = new Map<string, boolean>();

/**
 * Is the voucher signed by the channel's payer authorizer (EIP-712, the scheme's domain on this chain), with v
 * 27 or 28 as the contract on Base takes it (docs/X402-CONTRACTS.md)? The signer is recovered natively (lib/recover-signer.ts: about 75 us, against about 3 ms in JavaScript), once
 * per voucher in a while.
 */
export async function voucherSigned(s: SessionPayment): Promise<boolean> {
  const key = `${s.voucher.channelId}:${s.voucher.maxClaimableAmount}:${s.voucher.signature}:${s.config.payerAuthorizer}`;
  const known = checked.get(key);
  if (known !== undefined) return known;
  let ok = false;
  try {
    if (!claimableV(s.voucher.signature)) throw new Error("v is not 27 or 28");
    ok =
      (await recoverHashSigner(voucherDigest(s.voucher.channelId, s.voucher.maxClaimableAmount), s.voucher.signature)).toLowerCase() ===
      s.config.payerAuthorizer.toLowerCase();
  } catch {
    ok = false;
  }
  if (checked.size >= CHECKED_KEPT) checked.delete(checked.keys().next().value!);
  checked.set(key, ok);
  return ok;
}

/** the requirements a session is offered with (one entry of a 402's `accepts`) */
export function sessionRequirements(
  p: { priceAtomic: bigint; maxTimeoutSeconds: number; asset: { address: `0x${string}`; name: string; version: string } },
  terms: SessionTerms,
) {
  return {
    scheme: BATCH_SETTLEMENT_SCHEME,
    network: X402_NETWORK_V2,
    amount: p.priceAtomic.toString(),
    asset: getAddress(p.asset.address),
    payTo: terms.payTo,
    maxTimeoutSeconds: p.maxTimeoutSeconds,
    extra: {
      name: p.asset.name,
      version: p.asset.version,
      receiverAuthorizer: terms.receiverAuthorizer,
      withdrawDelay: terms.withdrawDelaySeconds,
      assetTransferMethod: "eip3009",
    },
  };
}
