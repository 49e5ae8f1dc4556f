/**
 * The pure half of x402 `upto` (EVM, Permit2): decode a payment's Permit2 authorization (a signed maximum,
 * with a witness naming the payTo and the settling facilitator) and check it against a metered route: the
 * maximum is the route's price, in this asset, to this payTo, spent by x402's upto proxy for this service's
 * facilitator, and no longer valid than the route's maxTimeoutSeconds (+ skew). No I/O.
 */
import { x402UptoPermit2ProxyAddress } from "@x402/evm";
import { getAddress } from "viem";
import { VALIDITY_SKEW_SECONDS, X402_NETWORK_V2, type PaymentPayloadV2 } from "../../payment-match";
import { UptoProof } from "../../payment-schemas";

export const UPTO_SCHEME = "upto";

export interface UptoAuthorization {
  from: `0x${string}`;
  maximum: bigint;
  token: `0x${string}`;
  spender: `0x${string}`;
  nonce: string;
  deadline: bigint;
  to: `0x${string}`;
  facilitator: `0x${string}`;
  validAfter: bigint;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** is this decoded PAYMENT-SIGNATURE an `upto` payment (whatever its content)? */
export const isUptoPayment = (payment: unknown): payment is PaymentPayloadV2 =>
  typeof payment === "object" &&
  payment !== null &&
  (payment as PaymentPayloadV2).x402Version === 2 &&
  (payment as PaymentPayloadV2).accepted?.scheme === UPTO_SCHEME;

/** the Permit2 authorization an `upto` payment carries (its shape: payment-schemas.ts UptoProof), or undefined when it is malformed */
export function decodeUptoAuthorization(payment: PaymentPayloadV2): UptoAuthorization | undefined {
  const parsed = UptoProof.safeParse(payment);
  if (!parsed.success) return undefined;
  const a = parsed.data.payload.permit2Authorization;
  return {
    from: getAddress(a.from),
    maximum: BigInt(a.permitted.amount),
    token: getAddress(a.permitted.token),
    spender: getAddress(a.spender),
    nonce: a.nonce,
    deadline: BigInt(a.deadline),
    to: getAddress(a.witness.to),
    facilitator: getAddress(a.witness.facilitator),
    validAfter: BigInt(a.witness.validAfter),
  };
}

/** why this `upto` authorization cannot pay this metered route, or null */
export function uptoMismatch(
  payment: PaymentPayloadV2,
  a: UptoAuthorization,
  route: { priceAtomic: bigint; payTo: `0x${string}`; asset: `0x${string}`; facilitator: `0x${string}`; maxTimeoutSeconds: number; nowSeconds: bigint },
): { error: string; extra?: Record<string, unknown> } | null {
  const accepted = payment.accepted;
  const same = (x: unknown, y: string) => typeof x === "string" && ADDRESS.test(x) && x.toLowerCase() === y.toLowerCase();
  if (accepted.network !== X402_NETWORK_V2) return { error: "unsupported_scheme_or_network" };
  // the maximum is the route's price: a maximum signed for another route does not pay this one
  if (accepted.amount !== route.priceAtomic.toString() || a.maximum !== route.priceAtomic)
    return { error: "payment_does_not_match_route", extra: { expected_amount: route.priceAtomic.toString(), received_amount: a.maximum.toString() } };
  if (!same(accepted.payTo, route.payTo) || a.to !== getAddress(route.payTo)) return { error: "payment_recipient_mismatch" };
  if (!same(accepted.asset, route.asset) || a.token !== getAddress(route.asset)) return { error: "payment_asset_mismatch" };
  if (a.spender !== getAddress(x402UptoPermit2ProxyAddress) || a.facilitator !== getAddress(route.facilitator))
    return { error: "invalid_payment", extra: { reason: "upto_spender_or_facilitator_mismatch" } };
  if (a.deadline - route.nowSeconds > BigInt(route.maxTimeoutSeconds + VALIDITY_SKEW_SECONDS))
    return { error: "authorization_validity_too_long", extra: { max_timeout_seconds: route.maxTimeoutSeconds, valid_before: a.deadline.toString() } };
  return null;
}
