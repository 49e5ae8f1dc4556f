/**
 * The credential of an authenticated request, one shape for every kind
 * (a bearer API key, an x402 payer, or a wallet signed in with x402's sign-in-with-x on a downward leg).
 */
import type { Response } from "express";

export interface Credential {
  kind: "bearer" | "x402" | "wallet_signature";
  /** stable identity for rate limits and idempotency scope, e.g. key:<id> or payer:<address> */
  scope: string;
  /** the treasury this credential acts on */
  treasuryId: string;
  /** bearer: the key id; x402: the payer address */
  subject: string;
}

export function credentialOf(res: Response): Credential | undefined {
  return res.locals.credential as Credential | undefined;
}

export function requireCredential(res: Response): Credential {
  const c = credentialOf(res);
  if (!c) throw new Error("route declared authenticated but no credential was set");
  return c;
}
