/**
 * x402 sign-in-with-x (SIWX): a wallet proves who it is with its own
 * signature, no USDC and no API key needed. The free "downward legs"
 * (repay, withdraw, sell, exit) and the reads of the wallet's own treasury
 * (its state, health, policy state, fee audit trail and receipts) take it
 * next to a bearer key and a payment, so an agent that holds only a key to its
 * wallet is never blocked by money, nor pays again to see what it paid for.
 *
 * Wire format (x402 v2, `@x402/extensions/sign-in-with-x`): the header
 * `SIGN-IN-WITH-X` is base64 of a JSON object
 *
 *   { domain, address, statement?, uri, version: "1", chainId: "eip155:<n>",
 *     type: "eip191", nonce, issuedAt, expirationTime?, notBefore?,
 *     requestId?, resources?, signatureScheme?, signature }
 *
 * and `signature` signs the EIP-4361 (Sign-In with Ethereum) text built from
 * those fields, EIP-191 personal_sign for an EOA, EIP-1271 for a contract
 * wallet (checked through the caller's hook, which needs an RPC).
 *
 * The official package parses the header and builds the EIP-4361 text (the
 * same code its client signs with), and recovers an EOA signature. The
 * checks of domain, uri, chain and time are done here, not by the package's
 * `validateSIWxMessage`: that one reads the wall clock (no `now` to inject,
 * no skew allowance for a client clock slightly ahead) and only compares the
 * uri's origin, where a free route wants its exact URL.
 *
 * Binding to one request: a SIWX message names a resource, not a request, so
 * by itself a captured header could be replayed on the same route with
 * another body until its nonce is spent. The gateway therefore asks for
 * `resources` to contain `urn:x402:request:<digest>`, where the digest is
 *
 *   sha256( METHOD "\n" path "\n" Idempotency-Key "\n" canonicalJson(body) )  (lowercase hex)
 *
 * - METHOD upper case; path = pathname and query of the public URL called
 *   (e.g. `/v1/treasuries/t_1/withdraw`); Idempotency-Key = the header, or ""
 *   when absent; body = the JSON body as parsed (null when none, as for a GET),
 *   object keys sorted (lib/canonical-json.ts `canonicalJson`, as the
 *   Idempotency-Key fingerprint).
 *
 * What a header is good for, then: this host (`domain`), this route's exact
 * URL (`uri`: a signature for /api/v1/health is refused by /api/v1/treasury),
 * this request (the digest), one of the accepted chains, a short window
 * (`issuedAt` within maxAge, `expirationTime`, `notBefore`), and once (the
 * caller spends the nonce). Who the signer may act for is the caller's rule.
 *
 * The 401 challenge of a refused request already carries that digest in
 * `info.resources`, so a client retrying the same request signs the challenge
 * as is (the stock `createSIWxPayload`); a client that changes anything adds
 * its own digest (`requestResource`).
 *
 * Replay: the nonce is NOT spent here. The caller spends it once per signer
 * (store/signed-nonce-store.ts `spend(address, nonce, "sign_in_with_x", at)`) before
 * acting, and keeps spent nonces at least until `expiresAt`.
 */
import { createHash, randomBytes } from "node:crypto";
import { getAddress, isAddress, type Address, type Hex } from "viem";
import {
  buildSIWxSchema,
  formatSIWEMessage,
  parseSIWxHeader,
  SIGN_IN_WITH_X,
  verifyEVMSignature,
  type SIWxExtension,
  type SIWxExtensionInfo,
  type SIWxPayload,
} from "@x402/extensions/sign-in-with-x";
import { canonicalJson } from "../lib/canonical-json";

/** the request header carrying the proof (HTTP headers are case-insensitive) */
export const SIWX_HEADER = "SIGN-IN-WITH-X";
/** the key of the extension in an x402 `extensions` object (and the 401 body) */
export const SIWX_EXTENSION_KEY = SIGN_IN_WITH_X;
/** the prefix of the `resources` entry that binds a signature to one request */
export const REQUEST_RESOURCE_PREFIX = "urn:x402:request:";
/** how far a client clock may run ahead of ours (issuedAt, notBefore) */
export const SIWX_CLOCK_SKEW_SECONDS = 30;
/** the challenge's lifetime when the caller names none */
export const SIWX_DEFAULT_EXPIRATION_SECONDS = 300;
/** a header longer than this is refused before decoding */
export const SIWX_MAX_HEADER_LENGTH = 8192;
/** SIWE asks for an alphanumeric nonce of 8 or more; we ask for 16 to 128 */
const NONCE_PATTERN = /^[A-Za-z0-9]{16,128}$/;
const EIP155 = /^eip155:([1-9][0-9]{0,15})$/;
const DIGEST = /^[0-9a-f]{64}$/;

export type { SIWxExtension, SIWxExtensionInfo, SIWxPayload };

/**
 * The request digest a SIWX signature is bound to (see the file comment):
 * sha256 over method, path, Idempotency-Key and the canonical JSON body.
 * `body` is normalized through JSON first, so a client's object with
 * `undefined` members hashes like the body the server parses.
 */
export function requestDigest(method: string, path: string, idempotencyKey: string | undefined, body: unknown): string {
  const json = body === undefined ? null : (JSON.parse(JSON.stringify(body)) as unknown);
  return createHash("sha256")
    .update(`${method.toUpperCase()}\n${path}\n${idempotencyKey ?? ""}\n${canonicalJson(json ?? null)}`)
    .digest("hex");
}

/** the `resources` entry that binds a signature to the request of this digest */
export function requestResource(digest: string): string {
  return `${REQUEST_RESOURCE_PREFIX}${digest}`;
}

/** CAIP-2 id of an EVM chain: 8453 -> "eip155:8453" */
export const caip2 = (chainId: number): string => `eip155:${chainId}`;

export interface SIWxChallengeOptions {
  /** the gateway's public base URL (its host is the SIWE domain) */
  publicBaseUrl: string;
  /** the exact URL of the route the caller must sign for */
  resourceUrl: string;
  /** EVM chain ids a wallet may sign on, e.g. [8453, 42161] */
  chainIds: number[];
  now: Date;
  /** default SIWX_DEFAULT_EXPIRATION_SECONDS */
  expirationSeconds?: number;
  statement?: string;
  /** when the refused request is known: binds the challenge to it (see `requestDigest`) */
  requestDigest?: string;
  /** default: 16 random bytes, hex */
  nonce?: string;
}

/**
 * The `sign-in-with-x` extension a free route offers a caller without a
 * credential (the value of `extensions["sign-in-with-x"]` in its 401 body):
 * a fresh challenge and the chains accepted. A client picks one chain and
 * signs: `createSIWxPayload({ ...ext.info, chainId, type: "eip191" }, signer, url)`.
 */
export function signInWithXExtension(o: SIWxChallengeOptions): SIWxExtension {
  const domain = new URL(o.publicBaseUrl).host;
  const uri = new URL(o.resourceUrl).href;
  if (o.chainIds.length === 0) throw new Error("sign-in-with-x needs at least one chain");
  if (o.requestDigest !== undefined && !DIGEST.test(o.requestDigest)) throw new Error("requestDigest must be 64 lowercase hex characters");
  const nonce = o.nonce ?? randomBytes(16).toString("hex");
  if (!NONCE_PATTERN.test(nonce)) throw new Error("a SIWX nonce must be 16 to 128 alphanumeric characters");
  const expirationSeconds = o.expirationSeconds ?? SIWX_DEFAULT_EXPIRATION_SECONDS;
  const info: SIWxExtensionInfo = {
    domain,
    uri,
    ...(o.statement !== undefined ? { statement: o.statement } : {}),
    version: "1",
    nonce,
    issuedAt: o.now.toISOString(),
    expirationTime: new Date(o.now.getTime() + expirationSeconds * 1000).toISOString(),
    resources: o.requestDigest !== undefined ? [uri, requestResource(o.requestDigest)] : [uri],
  };
  return {
    info,
    supportedChains: [...new Set(o.chainIds)].map((id) => ({ chainId: caip2(id), type: "eip191" as const })),
    schema: buildSIWxSchema(),
  };
}

/** EIP-1271 check of a contract wallet on `chainId` (e.g. viem publicClient.verifyMessage on that chain); errors count as a refusal */
export type ContractSignatureVerifier = (address: Address, message: string, signature: Hex, chainId: number) => Promise<boolean>;

export interface SIWxExpectation {
  publicBaseUrl: string;
  /** the exact URL of the route being called */
  resourceUrl: string;
  /** EVM chain ids accepted, e.g. [8453, 42161] */
  chainIds: number[];
  now: Date;
  /** issuedAt older than this is refused (e.g. STATEMENT_MAX_AGE_SECONDS) */
  maxAgeSeconds: number;
  /** without it only EOA (EIP-191) signatures verify */
  verifyContractSignature?: ContractSignatureVerifier;
  /** when given, `resources` must hold `urn:x402:request:<requestDigest>` and no other request binding */
  requestDigest?: string;
}

export type SIWxRefusal =
  | "malformed" // not base64 JSON of a SIWX payload, or too long
  | "unsupported_version" // version is not "1"
  | "unsupported_type" // type is not "eip191" (e.g. a Solana ed25519 proof)
  | "invalid_address"
  | "invalid_nonce" // not 16-128 alphanumeric characters
  | "domain_mismatch"
  | "uri_mismatch"
  | "chain_not_allowed"
  | "invalid_issued_at"
  | "issued_in_future"
  | "stale" // issuedAt older than maxAgeSeconds
  | "invalid_expiration_time"
  | "expired"
  | "invalid_not_before"
  | "not_yet_valid"
  | "request_not_bound" // a digest was expected and resources names no request
  | "request_mismatch" // resources names another request
  | "invalid_message" // the fields do not make an EIP-4361 message (e.g. a resource that is not a URI)
  | "bad_signature"
  | "verifier_error"; // the EIP-1271 hook failed

export type SIWxVerification =
  | {
      ok: true;
      /** the signer, EIP-55 */
      address: Address;
      /** spend it once per signer before acting */
      nonce: string;
      chainId: number;
      /** after this the proof is refused anyway: min(expirationTime, issuedAt + maxAge); keep the spent nonce until then */
      expiresAt: Date;
      method: "eip191" | "eip1271";
    }
  | { ok: false; reason: SIWxRefusal; message: string };

const refuse = (reason: SIWxRefusal, message: string): SIWxVerification => ({ ok: false, reason, message });

function time(value: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isFinite(t) ? t : undefined;
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/**
 * Verify a `SIGN-IN-WITH-X` header for this route and request. Pure but for
 * the optional EIP-1271 hook; does not spend the nonce.
 */
export async function verifySignInWithX(headerValue: string | undefined, expect: SIWxExpectation): Promise<SIWxVerification> {
  if (!headerValue || headerValue.length > SIWX_MAX_HEADER_LENGTH) return refuse("malformed", "the SIGN-IN-WITH-X header is missing or too long");
  let p: SIWxPayload;
  try {
    p = parseSIWxHeader(headerValue.trim());
  } catch (err) {
    return refuse("malformed", err instanceof Error ? err.message : "invalid SIGN-IN-WITH-X header");
  }
  if (p.version !== "1") return refuse("unsupported_version", `version must be "1"`);
  if (p.type !== "eip191") return refuse("unsupported_type", `type must be "eip191" (EVM wallets)`);
  if (!isAddress(p.address, { strict: false })) return refuse("invalid_address", "address must be a 0x-prefixed 20-byte hex address");
  if (!NONCE_PATTERN.test(p.nonce)) return refuse("invalid_nonce", "nonce must be 16 to 128 alphanumeric characters");

  const host = new URL(expect.publicBaseUrl).host;
  if (p.domain.toLowerCase() !== host.toLowerCase()) return refuse("domain_mismatch", `domain must be ${host}`);
  if (!sameUrl(p.uri, expect.resourceUrl)) return refuse("uri_mismatch", `uri must be ${expect.resourceUrl}`);

  const chain = EIP155.exec(p.chainId);
  const chainId = chain ? Number(chain[1]) : NaN;
  if (!expect.chainIds.includes(chainId)) return refuse("chain_not_allowed", `chainId must be one of ${expect.chainIds.map(caip2).join(", ")}`);

  const now = expect.now.getTime();
  const skew = SIWX_CLOCK_SKEW_SECONDS * 1000;
  const issuedAt = time(p.issuedAt);
  if (issuedAt === undefined) return refuse("invalid_issued_at", "issuedAt must be an ISO 8601 timestamp");
  if (issuedAt > now + skew) return refuse("issued_in_future", "issuedAt is in the future");
  if (now - issuedAt > expect.maxAgeSeconds * 1000) return refuse("stale", `issuedAt is older than ${expect.maxAgeSeconds} seconds; sign a fresh message`);
  let expiresAt = issuedAt + expect.maxAgeSeconds * 1000;
  if (p.expirationTime !== undefined) {
    const expiration = time(p.expirationTime);
    if (expiration === undefined) return refuse("invalid_expiration_time", "expirationTime must be an ISO 8601 timestamp");
    if (expiration <= now) return refuse("expired", "the message has expired");
    expiresAt = Math.min(expiresAt, expiration);
  }
  if (p.notBefore !== undefined) {
    const notBefore = time(p.notBefore);
    if (notBefore === undefined) return refuse("invalid_not_before", "notBefore must be an ISO 8601 timestamp");
    if (notBefore > now + skew) return refuse("not_yet_valid", "the message is not valid yet (notBefore)");
  }

  if (expect.requestDigest !== undefined) {
    const bound = (p.resources ?? []).filter((r) => r.startsWith(REQUEST_RESOURCE_PREFIX));
    if (bound.length === 0) return refuse("request_not_bound", `resources must contain ${REQUEST_RESOURCE_PREFIX}<digest of this request>`);
    if (bound.length !== 1 || bound[0] !== requestResource(expect.requestDigest))
      return refuse("request_mismatch", "the signature is bound to another request");
  }

  let message: string;
  try {
    message = formatSIWEMessage(p, p.address);
  } catch (err) {
    return refuse("invalid_message", err instanceof Error ? err.message : "not a valid EIP-4361 message");
  }
  const address = getAddress(p.address);
  const signature = p.signature as Hex;
  if (await verifyEVMSignature(message, address, signature)) {
    return { ok: true, address, nonce: p.nonce, chainId, expiresAt: new Date(expiresAt), method: "eip191" };
  }
  if (expect.verifyContractSignature) {
    let valid: boolean;
    try {
      valid = await expect.verifyContractSignature(address, message, signature, chainId);
    } catch (err) {
      return refuse("verifier_error", err instanceof Error ? err.message : "contract signature check failed");
    }
    if (valid) return { ok: true, address, nonce: p.nonce, chainId, expiresAt: new Date(expiresAt), method: "eip1271" };
  }
  return refuse("bad_signature", `the signature is not ${address}'s`);
}
