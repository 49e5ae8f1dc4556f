/**
 * The pure half of the payment gate: decode an X-PAYMENT header, check it
 * against this route's own requirements, and recover who signed it. No I/O;
 * the gate (payment-gate.ts) adds the facilitator, the lock and settlement.
 *
 * A proof matches a route only if it pays exactly the route's price (an
 * EIP-3009 authorization names no route: the distinct amount is what binds it),
 * to the service's payTo, on base-sepolia with the `exact` scheme, and is not
 * valid for longer than the advertised maxTimeoutSeconds (+30 s of skew).
 */
import { getAddress, recoverTypedDataAddress } from "viem";
import { exact } from "x402/schemes";
import { evm, type PaymentPayload } from "x402/types";

export const X402_NETWORK = "base-sepolia";
export const X402_CHAIN_ID = 84532;
/** clock skew tolerated on an authorization's validity window */
export const VALIDITY_SKEW_SECONDS = 30;

export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
}

export interface DecodedPayment {
  payment: PaymentPayload;
  authorization: Authorization;
}

/** the payment and its authorization, or undefined when the header is not an x402 exact EVM payment */
export function decodePaymentHeader(header: string): DecodedPayment | undefined {
  try {
    const payment = exact.evm.decodePayment(header) as PaymentPayload;
    const authorization = (payment.payload as { authorization?: Authorization }).authorization;
    if (!authorization || !/^0x[0-9a-fA-F]{40}$/.test(String(authorization.from))) return undefined;
    return { payment, authorization };
  } catch {
    return undefined;
  }
}

export type PaymentMismatch = { error: string; extra?: Record<string, unknown> };

/** why this decoded payment does not pay this route, or null when it does */
export function paymentMismatch(
  decoded: DecodedPayment | undefined,
  route: { priceAtomic: bigint; payTo: `0x${string}`; maxTimeoutSeconds: number; nowSeconds: bigint },
): PaymentMismatch | null {
  if (!decoded) return { error: "invalid_payment_header" };
  const { payment, authorization } = decoded;
  if (payment.scheme !== "exact" || payment.network !== X402_NETWORK) return { error: "unsupported_scheme_or_network" };
  if (!/^0x[0-9a-fA-F]{40}$/.test(String(authorization.to)) || getAddress(authorization.to) !== getAddress(route.payTo)) return { error: "payment_recipient_mismatch" };
  let value: bigint, validBefore: bigint;
  try {
    value = BigInt(authorization.value);
    validBefore = BigInt(authorization.validBefore);
  } catch {
    return { error: "invalid_payment_header" };
  }
  // exactly the price: a proof for a dearer route does not pay a cheaper one, nor a cheaper a dearer
  if (value !== route.priceAtomic) {
    return { error: "payment_does_not_match_route", extra: { expected_amount: route.priceAtomic.toString(), received_amount: authorization.value } };
  }
  // an authorization valid for longer than advertised is a standing order, not a payment for this request
  if (validBefore - route.nowSeconds > BigInt(route.maxTimeoutSeconds + VALIDITY_SKEW_SECONDS)) {
    return { error: "authorization_validity_too_long", extra: { max_timeout_seconds: route.maxTimeoutSeconds, valid_before: authorization.validBefore } };
  }
  return null;
}

/** the payer whose EIP-3009 signature is on the authorization (lower-case), or undefined */
export async function signedPayer(decoded: DecodedPayment | undefined, asset: { address: `0x${string}`; name: string; version: string }): Promise<string | undefined> {
  const signature = (decoded?.payment.payload as { signature?: `0x${string}` } | undefined)?.signature;
  if (!decoded || !signature) return undefined;
  const a = decoded.authorization;
  try {
    const signer = await recoverTypedDataAddress({
      domain: { name: asset.name, version: asset.version, chainId: X402_CHAIN_ID, verifyingContract: getAddress(asset.address) },
      // the EIP-3009 typed data as x402 declares it
      types: evm.authorizationTypes,
      primaryType: evm.authorizationPrimaryType,
      message: { from: a.from, to: a.to, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore), nonce: a.nonce },
      signature,
    });
    return signer.toLowerCase() === a.from.toLowerCase() ? signer.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}
