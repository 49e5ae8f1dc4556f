/** Nonces of signed statements (ownership, delegation): each is good once per signer. */
import type { Db } from "./db";

export class SignedNonceStore {
  constructor(private readonly db: Db) {}

  async used(signer: string, nonce: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS one FROM signed_nonces WHERE signer = ? AND nonce = ?", signer.toLowerCase(), nonce)) !== undefined;
  }

  /** spend it; false when it was spent already (by a concurrent request too) */
  async spend(signer: string, nonce: string, purpose: string, at: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          "INSERT INTO signed_nonces (signer, nonce, purpose, used_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
          signer.toLowerCase(),
          nonce,
          purpose,
          at,
        )
      ).changes === 1
    );
  }
}
