/**
 * API key material. Keys carry 256 random bits, are shown once and stored
 * only as a SHA-256 hash (fast hashing is right for high-entropy tokens; there
 * is nothing to brute-force). Comparison of admin tokens is constant-time.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** console: an operator's console session (a Safe owner signed in), bound to the Safe's treasury, short-lived */
export type KeyKind = "sandbox" | "live" | "console";

export const KEY_PREFIX: Record<KeyKind, string> = { sandbox: "sk_test_", live: "sk_live_", console: "sk_console_" };

export function generateApiKey(kind: KeyKind): string {
  return `${KEY_PREFIX[kind]}${randomBytes(32).toString("base64url")}`;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/**
 * Secrets at rest (a live key waiting in the outbox): AES-256-GCM with a
 * 32-byte key from SECRETS_KEY (hex or base64), or else a key generated once
 * into DATA_DIR/secrets.key (mode 0600). Sealed text is `v1:<iv>:<tag>:<data>`
 * (base64url); opening anything else (or tampered text) fails.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromConfig(configured: string | undefined, dataDir: string): SecretBox {
    if (configured) {
      const key = /^[0-9a-fA-F]{64}$/.test(configured) ? Buffer.from(configured, "hex") : Buffer.from(configured, "base64");
      if (key.length !== 32) throw new Error("SECRETS_KEY must be 32 bytes, hex (64 characters) or base64");
      return new SecretBox(key);
    }
    const file = path.join(dataDir, "secrets.key");
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (!fs.existsSync(file)) {
      try {
        fs.writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
    fs.chmodSync(file, 0o600);
    return new SecretBox(Buffer.from(fs.readFileSync(file, "utf8").trim(), "hex"));
  }

  static ephemeral(): SecretBox {
    return new SecretBox(randomBytes(32));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return `v1:${iv.toString("base64url")}:${cipher.getAuthTag().toString("base64url")}:${data.toString("base64url")}`;
  }

  open(sealed: string): string {
    const [v, iv, tag, data] = sealed.split(":");
    if (v !== "v1" || !iv || !tag || data === undefined) throw new Error("not a sealed secret");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
  }
}
