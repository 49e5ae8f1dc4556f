/**
 * API key material. Keys carry 256 random bits, are shown once and stored
 * only as a SHA-256 hash (fast hashing is right for high-entropy tokens; there
 * is nothing to brute-force). Comparison of admin tokens is constant-time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export type KeyKind = "sandbox" | "live";

export const KEY_PREFIX: Record<KeyKind, string> = { sandbox: "sk_test_", live: "sk_live_" };

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
