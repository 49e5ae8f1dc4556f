/**
 * The pure half of the payment gate: decode a payment header of either x402
 * version (v1 `X-PAYMENT`, v2 `PAYMENT-SIGNATURE`), check it against this
 * route's own requirements, and recover who signed it. No I/O; the gate
 * (payment-gate.ts) adds the facilitator, the lock and settlement.
 *
 * Both versions carry the same EIP-3009 authorization, so one authorization is
 * one payment whichever header brought it (the lock is per payer and nonce).
 * A proof matches a route only if it pays exactly the route's price (an
 * EIP-3009 authorization names no route: the distinct amount is what binds it),
 * to the service's payTo, on Base Sepolia (`base-sepolia` in v1, `eip155:84532`
 * in v2) with the `exact` scheme, and is not valid for longer than the
 * advertised maxTimeoutSeconds (+30 s of skew). A v2 proof's `accepted` echo
 * must also be this route's requirements (amount, asset, payTo), and its
 * `resource`, when sent, this route's URL.
 */
import { domainSeparator, getAddress, keccak256, toBytes } from "viem";
import { recoverHashSigner } from "../lib/recover-signer";
import { exact } from "x402/schemes";
import { evm, type PaymentPayload } from "x402/types";

export const X402_NETWORK = "base-sepolia";
/** the same network as x402 version 2 names it (CAIP-2) */
export const X402_NETWORK_V2 = "eip155:84532";
export const X402_CHAIN_ID = 84532;
export type X402Version = 1 | 2;
/** the request header each version sends its proof in, and the response header of its settlement */
export const PAYMENT_HEADERS = {
  1: { payment: "X-PAYMENT", response: "X-PAYMENT-RESPONSE" },
  2: { payment: "PAYMENT-SIGNATURE", response: "PAYMENT-RESPONSE", required: "PAYMENT-REQUIRED" },
} as const;
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

/** x402 version 2's requirements (one entry of `accepts`, and the `accepted` a v2 proof echoes) */
export interface RequirementsV2 {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

/** x402 version 2's payment payload (the decoded PAYMENT-SIGNATURE header) */
export interface PaymentPayloadV2 {
  x402Version: 2;
  accepted: RequirementsV2;
  payload: Record<string, unknown>;
  resource?: { url: string; description?: string; mimeType?: string };
  extensions?: Record<string, unknown>;
}

export type DecodedPaymentV1 = { version?: 1; payment: PaymentPayload; authorization: Authorization };
export type DecodedPaymentV2 = { version: 2; payment: PaymentPayloadV2; authorization: Authorization };
export type DecodedPayment = DecodedPaymentV1 | DecodedPaymentV2;

/** the x402 version 1 payment and its authorization, or undefined when the header is not an x402 exact EVM payment */
export function decodePaymentHeader(header: string): DecodedPaymentV1 | undefined {
  try {
    const payment = exact.evm.decodePayment(header) as PaymentPayload;
    const authorization = (payment.payload as { authorization?: Authorization }).authorization;
    if (!authorization || !/^0x[0-9a-fA-F]{40}$/.test(String(authorization.from))) return undefined;
    return { version: 1, payment, authorization };
  } catch {
    return undefined;
  }
}

/** the x402 version 2 payment (PAYMENT-SIGNATURE: base64 JSON) and its authorization, or undefined */
export function decodePaymentSignatureHeader(header: string): DecodedPaymentV2 | undefined {
  return decodePaymentV2(fromHeaderJson(header));
}

/** a version 2 header's decoded object as an `exact` payment and its authorization, or undefined */
export function decodePaymentV2(decoded: Record<string, unknown> | undefined): DecodedPaymentV2 | undefined {
  try {
    // not base64 JSON of an object: not a proof; a property of null throws: not a proof either
    const payment = decoded as PaymentPayloadV2 | undefined;
    if (payment?.x402Version !== 2) return undefined;
    if (typeof payment.accepted.scheme !== "string" || typeof payment.accepted.network !== "string") return undefined;
    const authorization = (payment.payload as { authorization?: Authorization }).authorization!;
    if (!/^0x[0-9a-fA-F]{40}$/.test(String(authorization.from))) return undefined;
    return { version: 2, payment, authorization };
  } catch {
    return undefined;
  }
}

/** x402 version 2 carries objects in headers as base64 of their JSON */
export const toHeaderJson = (value: unknown): string => Buffer.from(JSON.stringify(value), "utf8").toString("base64");

/** the object a version 2 header carries, or undefined when it is absent or not base64 JSON of an object */
export function fromHeaderJson(value: string | null | undefined): Record<string, unknown> | undefined {
  if (!value) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** the proof a request carries: v2's PAYMENT-SIGNATURE if sent, else v1's X-PAYMENT; undefined when neither */
export function paymentOf(
  header: (name: string) => string | undefined,
): { version: X402Version; header: string; decoded: DecodedPayment | undefined } | undefined {
  const v2 = header(PAYMENT_HEADERS[2].payment);
  if (v2) return { version: 2, header: v2, decoded: decodePaymentSignatureHeader(v2) };
  const v1 = header(PAYMENT_HEADERS[1].payment);
  if (v1) return { version: 1, header: v1, decoded: decodePaymentHeader(v1) };
  return undefined;
}

export type PaymentMismatch = { error: string; extra?: Record<string, unknown> };

/** why this decoded payment does not pay this route, or null when it does */
export function paymentMismatch(
  decoded: DecodedPayment | undefined,
  route: { priceAtomic: bigint; payTo: `0x${string}`; maxTimeoutSeconds: number; nowSeconds: bigint; asset?: `0x${string}`; resource?: string },
): PaymentMismatch | null {
  if (!decoded) return { error: "invalid_payment_header" };
  const { authorization } = decoded;
  if (decoded.version === 2) {
    const a = decoded.payment.accepted;
    if (a.scheme !== "exact" || a.network !== X402_NETWORK_V2) return { error: "unsupported_scheme_or_network" };
    // the requirements the client says it accepted are this route's: the same amount, to the same payTo, in the same asset
    const sameAddress = (x: unknown, y: string) => typeof x === "string" && /^0x[0-9a-fA-F]{40}$/.test(x) && x.toLowerCase() === y.toLowerCase();
    if (a.amount !== route.priceAtomic.toString())
      return { error: "payment_does_not_match_route", extra: { expected_amount: route.priceAtomic.toString(), received_amount: String(a.amount) } };
    if (!sameAddress(a.payTo, route.payTo)) return { error: "payment_recipient_mismatch" };
    if (route.asset && !sameAddress(a.asset, route.asset)) return { error: "payment_asset_mismatch" };
    if (route.resource && decoded.payment.resource?.url !== undefined && decoded.payment.resource.url !== route.resource) {
      return { error: "payment_does_not_match_route", extra: { expected_resource: route.resource, received_resource: decoded.payment.resource.url } };
    }
  } else if (decoded.payment.scheme !== "exact" || decoded.payment.network !== X402_NETWORK) return { error: "unsupported_scheme_or_network" };
  if (!/^0x[0-9a-fA-F]{40}$/.test(String(authorization.to)) || authorization.to.toLowerCase() !== route.payTo.toLowerCase())
    return { error: "payment_recipient_mismatch" };
  // the authorization's fields as EIP-3009 types them (uint256 as decimal text, bytes32): anything else is malformed here,
  // before the facilitator or a parser sees it
  const uint = (x: unknown) => typeof x === "string" && /^\d{1,78}$/.test(x);
  if (
    !uint(authorization.value) ||
    !uint(authorization.validAfter) ||
    !uint(authorization.validBefore) ||
    !/^0x[0-9a-fA-F]{64}$/.test(String(authorization.nonce))
  ) {
    return { error: "invalid_payment_header" };
  }
  const value = BigInt(authorization.value);
  const validBefore = BigInt(authorization.validBefore);
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

type Asset = { address: `0x${string}`; name: string; version: string };

/** EIP-3009's struct type, as x402 declares it (evm.authorizationTypes), and its hash */
const TRANSFER_WITH_AUTHORIZATION = `${evm.authorizationPrimaryType}(${evm.authorizationTypes[evm.authorizationPrimaryType].map((f) => `${f.type} ${f.name}`).join(",")})`;
const TRANSFER_TYPE_HASH = keccak256(toBytes(TRANSFER_WITH_AUTHORIZATION)).slice(2);
/** each asset's EIP-712 domain separator on this chain, computed once */
const separators = new Map<string, string>();
const UINT256_MAX = (1n << 256n) - 1n;

/** one 32-byte word of an ABI encoding, in hex without 0x; throws on a field that is not what EIP-3009 types it as */
const word = {
  address: (x: unknown) => {
    if (typeof x !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(x)) throw new Error("not an address");
    return x.slice(2).toLowerCase().padStart(64, "0");
  },
  uint256: (x: unknown) => {
    if (typeof x !== "string" || !/^\d{1,78}$/.test(x) || BigInt(x) > UINT256_MAX) throw new Error("not a uint256");
    return BigInt(x).toString(16).padStart(64, "0");
  },
  bytes32: (x: unknown) => {
    if (typeof x !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(x)) throw new Error("not a bytes32");
    return x.slice(2).toLowerCase();
  },
};

/**
 * The EIP-712 digest an EIP-3009 authorization's signature signs (the asset's domain on this chain), encoded
 * directly: the same bytes as viem's hashTypedData over x402's typed data, without its generic validation and
 * encoding (about 15 us instead of 190 us: every paid request's identity recovers one). Throws on a field that
 * is not what EIP-3009 types it as.
 */
export function authorizationDigest(a: Authorization, asset: Asset): `0x${string}` {
  const key = `${asset.address.toLowerCase()}:${asset.name}:${asset.version}`;
  let separator = separators.get(key);
  if (separator === undefined) {
    separator = domainSeparator({
      domain: { name: asset.name, version: asset.version, chainId: X402_CHAIN_ID, verifyingContract: getAddress(asset.address) },
    }).slice(2);
    separators.set(key, separator);
  }
  const fields = `${word.address(a.from)}${word.address(a.to)}${word.uint256(a.value)}${word.uint256(a.validAfter)}${word.uint256(a.validBefore)}${word.bytes32(a.nonce)}`;
  const struct = keccak256(`0x${TRANSFER_TYPE_HASH}${fields}`).slice(2);
  return keccak256(`0x1901${separator}${struct}`);
}

/** the payer whose EIP-3009 signature is on the authorization (lower-case), or undefined */
export async function signedPayer(decoded: DecodedPayment | undefined, asset: Asset): Promise<string | undefined> {
  const signature = (decoded?.payment.payload as { signature?: `0x${string}` } | undefined)?.signature;
  if (!decoded || !signature) return undefined;
  const a = decoded.authorization;
  try {
    const signer = await recoverHashSigner(authorizationDigest(a, asset), signature);
    return signer.toLowerCase() === a.from.toLowerCase() ? signer.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** the `payment-identifier` extension (x402 v2): a client's idempotency key for a paid request */
export const PAYMENT_IDENTIFIER = "payment-identifier";
const PAYMENT_ID = /^[A-Za-z0-9_-]{16,128}$/;

/** what the 402 declares: the identifier is optional here, 16 to 128 characters of [A-Za-z0-9_-] */
export function paymentIdentifierDeclaration() {
  return {
    info: { required: false },
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { required: { type: "boolean" }, id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$" } },
      required: ["required"],
    },
  };
}

/**
 * The identifier a v2 proof carries, whatever its scheme (the decoded PAYMENT-SIGNATURE object): its id, an invalid
 * one, or undefined (none: a v1 proof never has one)
 */
export function paymentIdentifier(payment: unknown): { id: string } | { invalid: string } | undefined {
  const p = payment as { x402Version?: unknown; extensions?: unknown } | null | undefined;
  if (typeof p !== "object" || p === null || p.x402Version !== 2 || typeof p.extensions !== "object" || p.extensions === null) return undefined;
  const ext = (p.extensions as Record<string, unknown>)[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | null | undefined;
  const id = typeof ext === "object" && ext !== null && typeof ext.info === "object" && ext.info !== null ? ext.info.id : undefined;
  if (id === undefined) return undefined;
  if (typeof id !== "string" || !PAYMENT_ID.test(id)) return { invalid: "the payment-identifier id must be 16 to 128 characters of A-Z, a-z, 0-9, _ and -" };
  return { id };
}
