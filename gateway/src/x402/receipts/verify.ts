/**
 * A receipt checked the way a paying agent (or anyone it shows the receipt to) checks it: the signature by the
 * extension's own verifier (`verifyReceiptSignatureJWS`, with the gateway's published key, never the key the
 * receipt names for itself: a did:jwk kid verifies any key's signature), then the binding recomputed from the
 * bytes the agent sent and received. Each failure is a code:
 *
 *   unsupported_format   not a JWS receipt (EIP-712 receipts cannot carry the binding: receipt.ts)
 *   unknown_key          signed by a key the gateway does not publish
 *   bad_signature        the payload or signature was changed (the extension's verifier refused it)
 *   no_binding           a receipt without this gateway's binding
 *   resource_mismatch    another resource URL
 *   request_mismatch     another method, path, body, tool or arguments
 *   answer_mismatch      another answer
 *   payer_mismatch       another payer
 *   payment_mismatch     another amount, asset, payTo, scheme, network or transaction
 *   stale                issued before now - maxAgeSeconds, or after now (+ 60 s of skew)
 */
import { extractJWSHeader, verifyReceiptSignatureJWS, type SignedReceipt } from "@x402/extensions/offer-receipt";
import { answerDigestOf, RECEIPT_BINDING_VERSION, requestBindingOf, type BoundReceiptPayload, type PaidAnswer, type PaidRequest } from "./receipt";
import type { PublishedReceiptJwk } from "./receipt-key";

export type ReceiptCheckCode =
  | "unsupported_format"
  | "unknown_key"
  | "bad_signature"
  | "no_binding"
  | "resource_mismatch"
  | "request_mismatch"
  | "answer_mismatch"
  | "payer_mismatch"
  | "payment_mismatch"
  | "stale";

export class ReceiptCheckError extends Error {
  constructor(
    readonly code: ReceiptCheckCode,
    message: string,
  ) {
    super(message);
  }
}
ReceiptCheckError.prototype.name = "ReceiptCheckError";

/** a client clock behind the gateway's */
const ISSUED_AT_SKEW_SECONDS = 60;

export interface ReceiptExpectation {
  /** the gateway's published keys (the JWKS at RECEIPT_KEYS_PATH, `keys`) */
  keys: readonly PublishedReceiptJwk[];
  /** what the agent sent */
  request: PaidRequest;
  /** what the agent received */
  answer: PaidAnswer;
  payer?: string;
  /** token units */
  amount?: bigint;
  asset?: string;
  payTo?: string;
  scheme?: string;
  /** CAIP-2 */
  network?: string;
  transaction?: string;
  resourceUrl?: string;
  /** with `now`: refuse a receipt older than this */
  maxAgeSeconds?: number;
  now?: Date;
}

const sameId = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase();

const fail = (code: ReceiptCheckCode, message: string): never => {
  throw new ReceiptCheckError(code, message);
};

/** the receipt's signed payload, once every expectation holds; a ReceiptCheckError otherwise */
export async function verifyReceipt(receipt: SignedReceipt, expect: ReceiptExpectation): Promise<BoundReceiptPayload> {
  if (receipt.format !== "jws") return fail("unsupported_format", `a ${String(receipt.format)} receipt carries no binding: only JWS receipts are issued`);
  let kid: string | undefined;
  try {
    kid = extractJWSHeader(receipt.signature).kid;
  } catch {
    return fail("bad_signature", "the receipt's signature is not a JWS compact serialization");
  }
  const key = expect.keys.find((k) => k.kid === kid);
  if (!key) return fail("unknown_key", "the receipt is signed by a key the gateway does not publish");
  let payload: BoundReceiptPayload;
  try {
    payload = (await verifyReceiptSignatureJWS(receipt, { kty: key.kty, crv: key.crv, x: key.x })) as BoundReceiptPayload;
  } catch {
    return fail("bad_signature", "the receipt's signature does not verify with the gateway's key");
  }
  const binding = payload.binding;
  if (payload.version !== 1 || binding?.version !== RECEIPT_BINDING_VERSION || binding.digest !== "sha-256")
    return fail("no_binding", "the receipt binds no request");

  if (expect.resourceUrl !== undefined && payload.resourceUrl !== expect.resourceUrl) fail("resource_mismatch", "the receipt names another resource");
  const request = requestBindingOf(expect.request);
  if (JSON.stringify(sortedBinding(binding.request)) !== JSON.stringify(sortedBinding(request))) fail("request_mismatch", "the receipt is for another request");
  if (binding.answer !== answerDigestOf(expect.answer)) fail("answer_mismatch", "the receipt is for another answer");
  if (expect.payer !== undefined && !sameId(payload.payer, expect.payer)) fail("payer_mismatch", "the receipt names another payer");

  const paid = binding.payment;
  if (expect.amount !== undefined && paid.amount !== expect.amount.toString()) fail("payment_mismatch", "the receipt states another amount");
  if (expect.asset !== undefined && !sameId(paid.asset, expect.asset)) fail("payment_mismatch", "the receipt states another asset");
  if (expect.payTo !== undefined && !sameId(paid.payTo, expect.payTo)) fail("payment_mismatch", "the receipt states another recipient");
  if (expect.scheme !== undefined && paid.scheme !== expect.scheme) fail("payment_mismatch", "the receipt states another scheme");
  if (expect.network !== undefined && payload.network !== expect.network) fail("payment_mismatch", "the receipt states another network");
  if (paid.transaction !== undefined && !sameId(payload.transaction, paid.transaction))
    fail("payment_mismatch", "the receipt's transaction disagrees with its binding");
  if (expect.transaction !== undefined && !sameId(paid.transaction, expect.transaction)) fail("payment_mismatch", "the receipt states another transaction");

  if (expect.now !== undefined) {
    const now = Math.floor(expect.now.getTime() / 1000);
    if (payload.issuedAt > now + ISSUED_AT_SKEW_SECONDS) fail("stale", "the receipt is issued in the future");
    if (expect.maxAgeSeconds !== undefined && payload.issuedAt < now - expect.maxAgeSeconds) fail("stale", "the receipt is older than allowed");
  }
  return payload;
}

/** a request binding with its members in one order, to compare two */
const sortedBinding = (b: object): [string, unknown][] => Object.entries(b).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
