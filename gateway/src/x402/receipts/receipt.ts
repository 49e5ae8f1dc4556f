/**
 * The signed receipt of a paid answer (x402's offer-receipt extension, `@x402/extensions/offer-receipt`),
 * bound to the exact request and the exact answer.
 *
 * Format: JWS (compact, alg EdDSA, kid a did:jwk of the receipt key: receipt-key.ts). The extension's other
 * format, EIP-712, signs a fixed struct (version, network, resourceUrl, payer, issuedAt, transaction) and
 * nothing else: a field added to its payload would travel unsigned, and its signer is an Ethereum account key.
 * A JWS signs its whole payload (the extension writes it with `canonicalize` and `verifyReceiptSignatureJWS`
 * checks it with jose and returns every field), the extension's JSON schema constrains only `format` and
 * `signature` of a JWS receipt, so the binding rides in the signed payload as one extra member:
 *
 *   { version: 1, network: "eip155:84532", resourceUrl, payer, issuedAt, transaction?,     <- the spec's fields
 *     binding: { version: 1, digest: "sha-256",                                             <- ours
 *                request: { transport: "http", method, path, body } | { transport: "mcp", tool, arguments },
 *                answer: <digest>,
 *                payment: { scheme, asset, payTo, amount, transaction | commitment } } }
 *
 * A generic verifier of the extension checks the signature and the spec's fields and ignores `binding` (the
 * spec asks unknown fields to be treated as unsupported, not as an error); the paying agent checks it
 * (verify.ts). The spec's fields stay exactly as the spec states them (resourceUrl is the plain public URL
 * the 402 and its offers name), so the extension's `verifyReceiptMatchesOffer` still matches receipt to offer.
 * `transaction` is included (the payer already knows it: verifiability over privacy); a scheme that has no
 * transaction at answer time (a batch voucher, an upto permit) leaves it out and names its commitment in
 * `binding.payment.commitment`. Digests: digest.ts.
 *
 * Where it travels (the extension's placement, spec §5.1): the settlement response's
 * `extensions["offer-receipt"].info.receipt`. On HTTP that is the PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE
 * (v1) header, base64 JSON, where the extension's client `extractReceiptFromResponse` reads it; on MCP the
 * settlement object in `result._meta["x402/payment-response"]`.
 */
import { getAddress, isAddress } from "viem";
import {
  convertNetworkStringToCAIP2,
  createJWS,
  OFFER_RECEIPT,
  verifyReceiptSignatureJWS,
  type JWSSignedReceipt,
  type ReceiptPayload,
  type SignedReceipt,
} from "@x402/extensions/offer-receipt";
import type { Clock } from "../../lib/clock";
import { fromHeaderJson, toHeaderJson } from "../payment-match";
import {
  DIGEST_ALGORITHM,
  httpAnswerDigest,
  httpRequestBinding,
  toolCallBinding,
  toolResultDigest,
  type Digest,
  type HttpRequestFacts,
  type RequestBinding,
  type ToolCallFacts,
} from "./digest";
import type { ReceiptSigningKey } from "./receipt-key";

/** the extension's key in `extensions` */
export const RECEIPT_EXTENSION_KEY = OFFER_RECEIPT;
/** the MCP `_meta` key of the settlement (x402's MCP transport; the same string as mcp/rest-twin.ts MCP_PAYMENT_RESPONSE_META) */
export const RECEIPT_MCP_META = "x402/payment-response";
export const RECEIPT_BINDING_VERSION = 1;

/** the extension's schema of a JWS receipt (spec §6.7) */
export const RECEIPT_EXTENSION_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    receipt: {
      type: "object",
      properties: {
        format: { type: "string", const: "jws" },
        signature: { type: "string", description: "JWS compact serialization containing the receipt payload" },
      },
      required: ["format", "signature"],
    },
  },
  required: ["receipt"],
} as const;

/** a receipt's input that cannot be signed (a bad network, payer, amount, reference, URL) */
export class ReceiptInputError extends Error {}
ReceiptInputError.prototype.name = "ReceiptInputError";

export type PaidRequest = ({ transport: "http" } & HttpRequestFacts) | ({ transport: "mcp" } & ToolCallFacts);
export type PaidAnswer = { transport: "http"; body: Uint8Array | string } | { transport: "mcp"; result: Record<string, unknown> };

/** the settled payment, as the gate knows it */
export interface PaymentFacts {
  scheme: string;
  /** CAIP-2 (`eip155:84532`) or x402 v1's name (`base-sepolia`) */
  network: string;
  payer: string;
  asset: string;
  payTo: string;
  /** token units */
  amount: bigint;
  /** the settlement's transaction, or the commitment of a scheme that settles later */
  reference: { transaction: string } | { commitment: string };
}

export interface ReceiptBinding {
  version: typeof RECEIPT_BINDING_VERSION;
  digest: typeof DIGEST_ALGORITHM;
  request: RequestBinding;
  answer: Digest;
  payment: { scheme: string; asset: string; payTo: string; amount: string; transaction?: string; commitment?: string };
}

/** the signed payload: the spec's receipt fields (transaction omitted when none, as the extension's JWS receipts do) and the binding */
export type BoundReceiptPayload = Omit<ReceiptPayload, "transaction"> & { transaction?: string; binding: ReceiptBinding };

export interface ReceiptInput {
  /** the paid resource's public URL, as the 402 and its offers name it (no query) */
  resourceUrl: string;
  request: PaidRequest;
  answer: PaidAnswer;
  payment: PaymentFacts;
}

export interface ReceiptExtension {
  info: { receipt: JWSSignedReceipt };
  schema: typeof RECEIPT_EXTENSION_SCHEMA;
}

export interface IssuedReceipt {
  receipt: JWSSignedReceipt;
  payload: BoundReceiptPayload;
  /** `extensions["offer-receipt"]` of the settlement response */
  extension: ReceiptExtension;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

export const requestBindingOf = (req: PaidRequest): RequestBinding => (req.transport === "http" ? httpRequestBinding(req) : toolCallBinding(req));

export const answerDigestOf = (answer: PaidAnswer): Digest => (answer.transport === "http" ? httpAnswerDigest(answer.body) : toolResultDigest(answer.result));

function networkOf(network: string): string {
  try {
    return convertNetworkStringToCAIP2(network);
  } catch {
    throw new ReceiptInputError(`unknown network ${JSON.stringify(network)}: give a CAIP-2 identifier (eip155:<chain id>)`);
  }
}

/** an EVM address in its checksummed form (the way the gate reports it), anything else as given */
function partyOf(what: string, value: string, evm: boolean): string {
  if (value.trim() === "" || /\s/.test(value)) throw new ReceiptInputError(`the ${what} must be a non-empty identifier`);
  if (!evm || (what === "asset" && value === "native")) return value;
  if (!isAddress(value, { strict: false })) throw new ReceiptInputError(`the ${what} must be an address on an eip155 network`);
  return getAddress(value.toLowerCase());
}

function paymentOf(p: PaymentFacts, evm: boolean): ReceiptBinding["payment"] {
  if (p.scheme.trim() === "") throw new ReceiptInputError("the payment's scheme is required");
  if (typeof p.amount !== "bigint" || p.amount < 0n) throw new ReceiptInputError("the amount is a non-negative bigint in token units");
  const base = { scheme: p.scheme, asset: partyOf("asset", p.asset, evm), payTo: partyOf("payTo", p.payTo, evm), amount: p.amount.toString() };
  if ("transaction" in p.reference) {
    if (evm && !TX_HASH.test(p.reference.transaction)) throw new ReceiptInputError("the transaction is a 0x-prefixed 32-byte hash");
    return { ...base, transaction: p.reference.transaction.toLowerCase() };
  }
  if (p.reference.commitment.trim() === "") throw new ReceiptInputError("the commitment id is required");
  return { ...base, commitment: p.reference.commitment };
}

function resourceUrlOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ReceiptInputError("the resource URL must be absolute");
  }
  if (parsed.hash !== "") throw new ReceiptInputError("the resource URL carries no fragment");
  return url;
}

/** the payload a receipt signs, at `issuedAt` (Unix seconds) */
export function receiptPayload(input: ReceiptInput, issuedAt: number): BoundReceiptPayload {
  if (input.request.transport !== input.answer.transport) throw new ReceiptInputError("the request and the answer must be of one transport");
  const network = networkOf(input.payment.network);
  const evm = network.startsWith("eip155:");
  const payment = paymentOf(input.payment, evm);
  const binding: ReceiptBinding = {
    version: RECEIPT_BINDING_VERSION,
    digest: DIGEST_ALGORITHM,
    request: requestBindingOf(input.request),
    answer: answerDigestOf(input.answer),
    payment,
  };
  return {
    version: 1,
    network,
    resourceUrl: resourceUrlOf(input.resourceUrl),
    payer: partyOf("payer", input.payment.payer, evm),
    issuedAt,
    ...(payment.transaction ? { transaction: payment.transaction } : {}),
    binding,
  };
}

const extensionOf = (receipt: JWSSignedReceipt): ReceiptExtension => ({ info: { receipt }, schema: RECEIPT_EXTENSION_SCHEMA });

async function sign(key: ReceiptSigningKey, payload: BoundReceiptPayload): Promise<IssuedReceipt> {
  const receipt: JWSSignedReceipt = { format: "jws", signature: await createJWS(payload, key.signer) };
  return { receipt, payload, extension: extensionOf(receipt) };
}

/** sign the receipt of one paid answer */
export async function issueReceipt(key: ReceiptSigningKey, input: ReceiptInput, clock: Clock): Promise<IssuedReceipt> {
  return sign(key, receiptPayload(input, Math.floor(clock.now().getTime() / 1000)));
}

/**
 * The receipt of an MCP tool call served by its REST twin: the twin's receipt (checked against this key: the
 * payment facts are taken from it) bound again to what the MCP client sent and received, the tool's name and
 * arguments and the tool result (before its `_meta` is set).
 */
export async function rebindToToolCall(
  key: ReceiptSigningKey,
  twin: SignedReceipt,
  call: ToolCallFacts,
  result: Record<string, unknown>,
  clock: Clock,
): Promise<IssuedReceipt> {
  if (twin.format !== "jws") throw new ReceiptInputError("the REST twin's receipt is not a JWS receipt");
  let signed: BoundReceiptPayload;
  try {
    signed = (await verifyReceiptSignatureJWS(twin, key.publicJwk)) as BoundReceiptPayload;
  } catch {
    throw new ReceiptInputError("the REST twin's receipt is not signed by this receipt key");
  }
  if (signed.binding?.version !== RECEIPT_BINDING_VERSION) throw new ReceiptInputError("the REST twin's receipt has no binding");
  return sign(key, {
    ...signed,
    issuedAt: Math.floor(clock.now().getTime() / 1000),
    binding: { ...signed.binding, request: toolCallBinding(call), answer: toolResultDigest(result) },
  });
}

/** a settlement response (the object of PAYMENT-RESPONSE, or of `_meta["x402/payment-response"]`) carrying the receipt */
export function withReceipt<T extends Record<string, unknown>>(settlement: T, issued: IssuedReceipt): T & { extensions: Record<string, unknown> } {
  const extensions = (settlement.extensions ?? {}) as Record<string, unknown>;
  return { ...settlement, extensions: { ...extensions, [RECEIPT_EXTENSION_KEY]: issued.extension } };
}

/** a PAYMENT-RESPONSE / X-PAYMENT-RESPONSE header value (base64 JSON, either version) carrying the receipt */
export function withReceiptHeader(header: string, issued: IssuedReceipt): string {
  const settlement = fromHeaderJson(header);
  if (!settlement || Array.isArray(settlement)) throw new ReceiptInputError("the payment response header is not base64 JSON of a settlement");
  return toHeaderJson(withReceipt(settlement, issued));
}
