import type { KeyKind } from "../lib/secrets";
import type { Db } from "./db";
import { rowReader, type RowOf } from "./schema/table";
import { apiKeys } from "./schema/tables/treasury";

export interface ApiKeyRecord {
  id: string;
  keyHash: string;
  kind: KeyKind;
  last4: string;
  treasuryId: string | null;
  accessRequestId: string | null;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  /** a console session's owner (the Safe owner who signed in), checked again on chain while the key is used */
  ownerAddress: string | null;
  /** why the key was revoked: owner_removed (a console session whose owner left the Safe) */
  revokedReason: RevocationReason | null;
}

export type RevocationReason = NonNullable<RowOf<typeof apiKeys>["revokedReason"]>;

const fromRow: (raw: unknown) => ApiKeyRecord = rowReader(apiKeys);

export class ApiKeyStore {
  constructor(private readonly db: Db) {}

  async insert(k: ApiKeyRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO api_keys (id, key_hash, kind, last4, treasury_id, access_request_id, created_at, expires_at, revoked_at, owner_address, revoked_reason)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      k.id,
      k.keyHash,
      k.kind,
      k.last4,
      k.treasuryId,
      k.accessRequestId,
      k.createdAt,
      k.expiresAt,
      k.revokedAt,
      k.ownerAddress,
      k.revokedReason,
    );
  }

  /** revoke a key for good (the first revocation and its reason stay); false when it was already revoked */
  async revoke(id: string, at: string, reason: RevocationReason): Promise<boolean> {
    return (await this.db.run("UPDATE api_keys SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL", at, reason, id)).changes === 1;
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.get("SELECT * FROM api_keys WHERE key_hash = ?", hash);
    return row ? fromRow(row) : undefined;
  }

  /** is a live key (issued through the reviewed onboarding, not revoked) bound to this treasury? */
  async hasLiveKey(treasuryId: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 FROM api_keys WHERE treasury_id = ? AND kind = 'live' AND revoked_at IS NULL", treasuryId)) !== undefined;
  }

  async countActiveSandbox(nowIso: string): Promise<number> {
    const row = (await this.db.get(
      "SELECT COUNT(*) AS n FROM api_keys WHERE kind = 'sandbox' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
      nowIso,
    )) as { n: number };
    return row.n;
  }

  /** the key hashes of a treasury, used only to prove secrets are not stored in clear */
  async all(): Promise<ApiKeyRecord[]> {
    return (await this.db.all("SELECT * FROM api_keys")).map(fromRow);
  }
}
