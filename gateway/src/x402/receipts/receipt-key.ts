/**
 * The receipt-signing key: a dedicated Ed25519 key that signs x402 offers and receipts (JWS, alg EdDSA) and
 * nothing else. It controls no funds and cannot: an Ed25519 key is no Ethereum account (no address, no
 * transaction can be signed with it), so a leak of it forges receipts, never moves money. The gateway still
 * holds no key that controls funds.
 *
 * Where it comes from, in this order:
 *   1. X402_RECEIPT_SIGNING_KEY: `ed25519:` then the 32-byte seed in base64url (43 characters) or hex (64).
 *      The prefix is required so that an Ethereum private key (0x + 64 hex, or bare hex) pasted by mistake is
 *      refused instead of being held. Several instances that answer for one service share this value.
 *   2. otherwise DATA_DIR/x402-receipt-signing.key: the same text, generated on first start (created
 *      exclusively, so two processes starting together keep one key; mode 0600, its directory 0700) and read
 *      on every later start.
 *
 * Its public identity: `kid` is a did:jwk DID URL (`did:jwk:<base64url of the public JWK>#0`): it names the
 * public key itself, so `@x402/extensions`' `verifyReceiptSignatureJWS(receipt)` can check a signature with no
 * key lookup. That proves only "signed by the key in kid": a client pins the gateway's key (the JWKS at
 * RECEIPT_KEYS_PATH, or the kid of the 402's signed offers) and compares (verify.ts does).
 *
 * The private key never leaves this file's closure: the object handed out (signer, kid, public JWK) has no
 * field, JSON form or error message that contains it.
 */
import { createPrivateKey, createPublicKey, randomBytes, sign, type KeyObject } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { JWSSigner } from "@x402/extensions/offer-receipt";
import { canonicalJson } from "../../lib/canonical-json";

/** the environment variable of a configured key */
export const RECEIPT_KEY_ENV = "X402_RECEIPT_SIGNING_KEY";
/** the file under DATA_DIR of a generated key */
export const RECEIPT_KEY_FILE = "x402-receipt-signing.key";
/** the prefix of a key's text */
export const RECEIPT_KEY_PREFIX = "ed25519:";
/** the well-known route where the gateway publishes its receipt keys (a JWKS) */
export const RECEIPT_KEYS_PATH = "/.well-known/x402-receipt-keys.json";
/** the JWS algorithm of every offer and receipt */
export const RECEIPT_JWS_ALGORITHM = "EdDSA";

/** PKCS#8 DER of an Ed25519 private key is this prefix, then the 32-byte seed (RFC 8410) */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** a key that cannot be loaded or used; its message never contains the key */
export class ReceiptKeyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
ReceiptKeyError.prototype.name = "ReceiptKeyError";

/** an Ed25519 public key as a JWK (RFC 8037) */
export interface Ed25519PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
}

/** one entry of the published JWKS */
export interface PublishedReceiptJwk extends Ed25519PublicJwk {
  kid: string;
  alg: typeof RECEIPT_JWS_ALGORITHM;
  use: "sig";
}

export interface ReceiptSigningKey {
  /** did:jwk DID URL of the public key: the JWS header's `kid` */
  readonly kid: string;
  readonly publicJwk: Ed25519PublicJwk;
  /** configured (X402_RECEIPT_SIGNING_KEY), generated now, or loaded from DATA_DIR */
  readonly source: "configured" | "generated" | "file";
  /** the signer `@x402/extensions`' `createJWS` takes */
  readonly signer: JWSSigner;
}

/** a new key's text (`ed25519:<base64url seed>`), for X402_RECEIPT_SIGNING_KEY or the key file */
export function generateReceiptKeyText(): string {
  return `${RECEIPT_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** the 32-byte seed of a key's text; the error says what is wrong, never what was given */
function seedOf(text: string, origin: string): Buffer {
  const value = text.trim();
  if (/^(0x)?[0-9a-fA-F]{64}$/.test(value)) {
    throw new ReceiptKeyError(
      `${origin} looks like an Ethereum private key: the receipt key is a dedicated Ed25519 seed written ${RECEIPT_KEY_PREFIX}<base64url>, never a key that controls funds`,
    );
  }
  if (!value.startsWith(RECEIPT_KEY_PREFIX)) throw new ReceiptKeyError(`${origin} must start with ${RECEIPT_KEY_PREFIX} (an Ed25519 seed)`);
  const encoded = value.slice(RECEIPT_KEY_PREFIX.length);
  const seed = /^[0-9a-fA-F]{64}$/.test(encoded)
    ? Buffer.from(encoded, "hex")
    : /^[A-Za-z0-9_-]{43}$/.test(encoded)
      ? Buffer.from(encoded, "base64url")
      : undefined;
  if (!seed || seed.length !== 32) throw new ReceiptKeyError(`${origin} must be ${RECEIPT_KEY_PREFIX} then 32 bytes in base64url (43 characters) or hex (64)`);
  return seed;
}

/** did:jwk of a public key (the JWK's members in RFC 8785 order), with the fragment #0 that did:jwk names its key by */
export const didJwkOf = (jwk: Ed25519PublicJwk): string => `did:jwk:${Buffer.from(canonicalJson(jwk), "utf8").toString("base64url")}#0`;

function keyOf(seed: Buffer, source: ReceiptSigningKey["source"]): ReceiptSigningKey {
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  } catch {
    // the cause is not kept: it could quote the key material
    throw new ReceiptKeyError("the receipt key could not be imported as an Ed25519 key");
  } finally {
    seed.fill(0);
    der.fill(0);
  }
  const exported = createPublicKey(privateKey).export({ format: "jwk" });
  const publicJwk: Ed25519PublicJwk = { kty: "OKP", crv: "Ed25519", x: String(exported.x) };
  const kid = didJwkOf(publicJwk);
  const signer: JWSSigner = {
    kid,
    format: "jws",
    algorithm: RECEIPT_JWS_ALGORITHM,
    sign: async (signingInput: Uint8Array) => sign(null, signingInput, privateKey).toString("base64url"),
  };
  return Object.freeze({ kid, publicJwk: Object.freeze(publicJwk), source, signer: Object.freeze(signer) });
}

/** a key from its text (`ed25519:...`) */
export function receiptKeyFromText(text: string, source: ReceiptSigningKey["source"] = "configured"): ReceiptSigningKey {
  return keyOf(seedOf(text, RECEIPT_KEY_ENV), source);
}

/**
 * The gateway's receipt key: the configured one (X402_RECEIPT_SIGNING_KEY), else DATA_DIR's, generated on
 * first start. Synchronous: it runs once at startup, before the server listens.
 */
export function loadReceiptSigningKey(opts: { configured: string | undefined; dataDir: string }): ReceiptSigningKey {
  if (opts.configured !== undefined && opts.configured.trim() !== "") return receiptKeyFromText(opts.configured, "configured");
  const file = path.join(opts.dataDir, RECEIPT_KEY_FILE);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  let source: ReceiptSigningKey["source"] = "file";
  try {
    fs.writeFileSync(file, `${generateReceiptKeyText()}\n`, { mode: 0o600, flag: "wx" });
    source = "generated";
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw new ReceiptKeyError(`cannot create the receipt key file ${file}`, { cause: err });
  }
  fs.chmodSync(file, 0o600);
  return keyOf(seedOf(fs.readFileSync(file, "utf8"), file), source);
}

/** the JWKS the gateway publishes at RECEIPT_KEYS_PATH: the current key first, then retired keys whose receipts still verify */
export function publishedReceiptKeys(keys: readonly ReceiptSigningKey[]): { keys: PublishedReceiptJwk[] } {
  return { keys: keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: RECEIPT_JWS_ALGORITHM, use: "sig" })) };
}
