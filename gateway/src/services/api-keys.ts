/** Issuing API keys: generated, hashed, stored, returned once. */
import { newId } from "@treasury/core/lib/ids";
import { generateApiKey, hashApiKey, type KeyKind } from "../lib/secrets";
import type { ApiKeyStore } from "../store/api-key-store";

export interface IssuedKey {
  key: string;
  id: string;
  expiresAt: string | null;
}

export async function issueApiKey(
  store: ApiKeyStore,
  opts: { kind: KeyKind; treasuryId: string | null; accessRequestId?: string | null; ownerAddress?: string | null; now: Date; ttlMs: number | null },
): Promise<IssuedKey> {
  const key = generateApiKey(opts.kind);
  const id = newId("key");
  const expiresAt = opts.ttlMs === null ? null : new Date(opts.now.getTime() + opts.ttlMs).toISOString();
  await store.insert({
    id,
    keyHash: hashApiKey(key),
    kind: opts.kind,
    last4: key.slice(-4),
    treasuryId: opts.treasuryId,
    accessRequestId: opts.accessRequestId ?? null,
    createdAt: opts.now.toISOString(),
    expiresAt,
    revokedAt: null,
    ownerAddress: opts.ownerAddress ?? null,
    revokedReason: null,
  });
  return { key, id, expiresAt };
}
