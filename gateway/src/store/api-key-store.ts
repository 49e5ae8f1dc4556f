import type { KeyKind } from "../lib/secrets";
import type { Db } from "./db";

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
}

interface Row {
  id: string;
  key_hash: string;
  kind: KeyKind;
  last4: string;
  treasury_id: string | null;
  access_request_id: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

const fromRow = (r: Row): ApiKeyRecord => ({
  id: r.id,
  keyHash: r.key_hash,
  kind: r.kind,
  last4: r.last4,
  treasuryId: r.treasury_id,
  accessRequestId: r.access_request_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

export class ApiKeyStore {
  constructor(private readonly db: Db) {}

  insert(k: ApiKeyRecord): void {
    this.db
      .prepare(
        `INSERT INTO api_keys (id, key_hash, kind, last4, treasury_id, access_request_id, created_at, expires_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(k.id, k.keyHash, k.kind, k.last4, k.treasuryId, k.accessRequestId, k.createdAt, k.expiresAt, k.revokedAt);
  }

  findByHash(hash: string): ApiKeyRecord | undefined {
    const row = this.db.prepare("SELECT * FROM api_keys WHERE key_hash = ?").get(hash) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** is a live key (issued through the reviewed onboarding, not revoked) bound to this treasury? */
  hasLiveKey(treasuryId: string): boolean {
    return this.db.prepare("SELECT 1 FROM api_keys WHERE treasury_id = ? AND kind = 'live' AND revoked_at IS NULL").get(treasuryId) !== undefined;
  }

  countActiveSandbox(nowIso: string): number {
    const row = this.db
      .prepare("SELECT COUNT(*) AS n FROM api_keys WHERE kind = 'sandbox' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)")
      .get(nowIso) as { n: number };
    return row.n;
  }

  /** the key hashes of a treasury, used only to prove secrets are not stored in clear */
  all(): ApiKeyRecord[] {
    return (this.db.prepare("SELECT * FROM api_keys").all() as Row[]).map(fromRow);
  }
}
