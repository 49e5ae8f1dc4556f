/**
 * The receipt key: configured, or generated once under DATA_DIR (mode 0600) and kept across starts; refused
 * when it looks like an Ethereum key; never shown: not by its object, its JSON, util.inspect, nor any error
 * message.
 */
import type { KeyObject } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { inspect } from "node:util";
import { createJWS, extractPublicKeyFromKid, verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt";
import { afterEach, describe, expect, it } from "vitest";
import {
  generateReceiptKeyText,
  loadReceiptSigningKey,
  publishedReceiptKeys,
  RECEIPT_KEY_FILE,
  RECEIPT_KEY_PREFIX,
  ReceiptKeyError,
  receiptKeyFromText,
} from "./receipt-key";

const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "receipt-key-"));
  dirs.push(d);
  return path.join(d, "data");
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** every spelling of a seed a leak could take */
function spellings(text: string): string[] {
  const seed = Buffer.from(text.slice(RECEIPT_KEY_PREFIX.length), "base64url");
  return [text, seed.toString("base64url"), seed.toString("base64"), seed.toString("hex"), seed.toString("hex").toUpperCase()];
}

const messageOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message} ${inspect(err)}`;
  }
  throw new Error("expected a throw");
};

describe("loading the receipt key", () => {
  it("generates one key on first start, mode 0600, and loads the same one after", () => {
    const dataDir = tempDir();
    const first = loadReceiptSigningKey({ configured: undefined, dataDir });
    expect(first.source).toBe("generated");
    const file = path.join(dataDir, RECEIPT_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync(file, "utf8")).toMatch(/^ed25519:[A-Za-z0-9_-]{43}\n$/);
    const again = loadReceiptSigningKey({ configured: "", dataDir });
    expect(again.source).toBe("file");
    expect(again.kid).toBe(first.kid);
  });

  it("puts the file back to 0600 when it was loosened", () => {
    const dataDir = tempDir();
    loadReceiptSigningKey({ configured: undefined, dataDir });
    fs.chmodSync(path.join(dataDir, RECEIPT_KEY_FILE), 0o644);
    loadReceiptSigningKey({ configured: undefined, dataDir });
    expect(fs.statSync(path.join(dataDir, RECEIPT_KEY_FILE)).mode & 0o777).toBe(0o600);
  });

  it("takes the configured key over the file, and writes no file", () => {
    const dataDir = tempDir();
    const text = generateReceiptKeyText();
    const key = loadReceiptSigningKey({ configured: text, dataDir });
    expect(key.source).toBe("configured");
    expect(key.kid).toBe(receiptKeyFromText(text).kid);
    expect(fs.existsSync(path.join(dataDir, RECEIPT_KEY_FILE))).toBe(false);
  });

  it("accepts the seed in hex as well, as the same key", () => {
    const text = generateReceiptKeyText();
    const hex = `${RECEIPT_KEY_PREFIX}${Buffer.from(text.slice(RECEIPT_KEY_PREFIX.length), "base64url").toString("hex")}`;
    expect(receiptKeyFromText(hex).kid).toBe(receiptKeyFromText(text).kid);
  });

  it("distinct seeds are distinct keys", () => {
    expect(receiptKeyFromText(generateReceiptKeyText()).kid).not.toBe(receiptKeyFromText(generateReceiptKeyText()).kid);
  });

  it("refuses an Ethereum private key, with or without 0x, and never quotes it", () => {
    const evmKey = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
    for (const given of [evmKey, `0x${evmKey}`]) {
      const message = messageOf(() => receiptKeyFromText(given));
      expect(message).toContain("ReceiptKeyError");
      expect(message).toContain("looks like an Ethereum private key");
      expect(message).not.toContain(evmKey);
    }
  });

  it("refuses a malformed key without quoting it", () => {
    const text = generateReceiptKeyText();
    for (const given of [text.slice(RECEIPT_KEY_PREFIX.length), `${text}AA`, `${text.slice(0, -1)}!`, "ed25519:", `secp256k1:${text.slice(8)}`]) {
      const message = messageOf(() => receiptKeyFromText(given));
      expect(message).toMatch(/ReceiptKeyError: X402_RECEIPT_SIGNING_KEY must/);
      for (const s of spellings(text)) expect(message).not.toContain(s);
    }
  });

  it("refuses a damaged key file by its path, not its content", () => {
    const dataDir = tempDir();
    fs.mkdirSync(dataDir, { recursive: true });
    const secret = "ed25519:not-a-valid-seed-but-secret-looking";
    fs.writeFileSync(path.join(dataDir, RECEIPT_KEY_FILE), secret);
    const message = messageOf(() => loadReceiptSigningKey({ configured: undefined, dataDir }));
    expect(message).toContain(path.join(dataDir, RECEIPT_KEY_FILE));
    expect(message).not.toContain("secret-looking");
  });
});

describe("what the key shows", () => {
  it("its object, JSON and inspection hold the public key only", () => {
    const text = generateReceiptKeyText();
    const key = receiptKeyFromText(text);
    const shown = [JSON.stringify(key), inspect(key, { depth: 10, showHidden: true }), JSON.stringify(publishedReceiptKeys([key]))];
    for (const s of spellings(text)) for (const view of shown) expect(view).not.toContain(s);
    expect(Object.keys(key).sort()).toEqual(["kid", "publicJwk", "signer", "source"]);
    expect(Object.keys(key.publicJwk).sort()).toEqual(["crv", "kty", "x"]);
  });

  it("kid is a did:jwk of the public key, which the extension resolves itself", async () => {
    const key = receiptKeyFromText(generateReceiptKeyText());
    expect(key.kid).toMatch(/^did:jwk:[A-Za-z0-9_-]+#0$/);
    const jwk = JSON.parse(Buffer.from(key.kid.slice("did:jwk:".length, -2), "base64url").toString("utf8"));
    expect(jwk).toEqual({ crv: "Ed25519", kty: "OKP", x: key.publicJwk.x });
    const resolved = await extractPublicKeyFromKid(key.kid);
    expect((resolved as KeyObject).asymmetricKeyType).toBe("ed25519");
  });

  it("the published JWKS entry verifies what the key signs, with the extension's verifier", async () => {
    const key = receiptKeyFromText(generateReceiptKeyText());
    const [published] = publishedReceiptKeys([key]).keys;
    expect(published).toEqual({ ...key.publicJwk, kid: key.kid, alg: "EdDSA", use: "sig" });
    const signature = await createJWS({ version: 1, probe: "x" }, key.signer);
    expect(await verifyReceiptSignatureJWS({ format: "jws", signature }, published)).toEqual({ version: 1, probe: "x" });
    const other = publishedReceiptKeys([receiptKeyFromText(generateReceiptKeyText())]).keys[0]!;
    await expect(verifyReceiptSignatureJWS({ format: "jws", signature }, other)).rejects.toThrow();
  });

  it("is a ReceiptKeyError by name", () => {
    expect(new ReceiptKeyError("x").name).toBe("ReceiptKeyError");
  });
});
