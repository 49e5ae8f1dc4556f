/**
 * Credential lookup: a bearer API key is found by its hash and must be
 * neither expired nor revoked. (The x402 payment credential plugs in beside
 * it; see issue 4.)
 */
import type { RequestView as Request } from "./request-view";
import { hashApiKey } from "../lib/secrets";
import type { ApiKeyRecord } from "../store/api-key-store";
import type { ServiceContext } from "./context";

export const BEARER_PATTERN = /^Bearer (sk_(?:test|live|console)_[A-Za-z0-9_-]{16,128})$/;

export type BearerLookup = { kind: "none" } | { kind: "invalid"; reason: string; revoked?: ApiKeyRecord } | { kind: "valid"; key: ApiKeyRecord };

export async function lookupBearer(ctx: ServiceContext<"apiKeys">, authorization: string | undefined): Promise<BearerLookup> {
  if (!authorization) return { kind: "none" };
  const match = BEARER_PATTERN.exec(authorization.trim());
  if (!match)
    return { kind: "invalid", reason: "Authorization must be 'Bearer sk_test_...' or 'Bearer sk_live_...' (or a console session, 'Bearer sk_console_...')" };
  const key = await ctx.stores.apiKeys.findByHash(hashApiKey(match[1]!));
  if (!key) return { kind: "invalid", reason: "unknown API key" };
  if (key.revokedAt) return { kind: "invalid", reason: "API key revoked", revoked: key };
  if (key.expiresAt && key.expiresAt <= ctx.clock.now().toISOString()) return { kind: "invalid", reason: "API key expired" };
  return { kind: "valid", key };
}

const perRequest = new WeakMap<Request, Promise<BearerLookup>>();
/**
 * The bearer lookup of one request, made once: the rate limiter (which counts by credential) and the
 * authenticator both ask, and the request's Authorization header does not change between them.
 */
export function lookupRequestBearer(ctx: ServiceContext<"apiKeys">, req: Request): Promise<BearerLookup> {
  let found = perRequest.get(req);
  if (!found) {
    found = lookupBearer(ctx, req.header("authorization"));
    perRequest.set(req, found);
  }
  return found;
}

/** rate-limit identity of a request: its valid credential, if any */
export async function credentialIdentity(ctx: ServiceContext<"apiKeys">, req: Request): Promise<string | undefined> {
  const found = await lookupRequestBearer(ctx, req);
  return found.kind === "valid" ? `key:${found.key.id}` : undefined;
}
