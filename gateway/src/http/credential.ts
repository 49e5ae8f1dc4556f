/**
 * The credential a request was authenticated with (packages/core/src/domain/credential.ts), as the request carries it:
 * `res.locals.credential`, set by the route's authentication.
 */
import type { Response } from "express";
import type { Credential } from "@treasury/core/domain/credential";

export function credentialOf(res: Response): Credential | undefined {
  return res.locals.credential as Credential | undefined;
}

export function requireCredential(res: Response): Credential {
  const c = credentialOf(res);
  if (!c) throw new Error("route declared authenticated but no credential was set");
  return c;
}
