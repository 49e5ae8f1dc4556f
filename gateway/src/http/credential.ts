/**
 * The credential of an authenticated request, one shape for every kind
 * (bearer API key today; the x402 payer plugs in as a second kind).
 */
import type { Response } from "express";

export interface Credential {
  kind: "bearer" | "x402";
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
