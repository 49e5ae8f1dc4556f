/**
 * The credential layer of protected routes (spec 5): one place that turns a
 * request into a Credential. Bearer API keys are looked up by hash (expiry
 * and revocation honoured). A console session's owner is confirmed on chain
 * again (console-ownership.ts): on each write, and on a read once its last
 * confirmation is older than a minute. The x402 payment proof is the second
 * kind and plugs in here.
 */
import type { AnswerView as Response, RequestView as Request } from "./request-view";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Credential } from "@treasury/core/domain/credential";
import { ownerRemoved, type ConsoleOwnership } from "./console-ownership";
import type { ServiceContext } from "./context";
import { lookupRequestBearer } from "./credentials";

/** what a request may do without changing anything: a console key's owner is checked again for any other method */
const READS = new Set(["GET", "HEAD"]);

export type Authenticator = (req: Request, res: Response) => Promise<void> | void;

export function bearerAuthenticator(ctx: ServiceContext<"apiKeys">, owners: ConsoleOwnership): Authenticator {
  return async (req, res) => {
    const found = await lookupRequestBearer(ctx, req);
    if (found.kind === "none") {
      throw new TreasuryError(
        "unauthorized",
        "missing credential: send Authorization: Bearer <API key> (or pay per request with X-PAYMENT when x402 is enabled)",
        {},
        { "WWW-Authenticate": 'Bearer realm="treasury"' },
      );
    }
    if (found.kind === "invalid") {
      // a console session revoked because its owner left the Safe says so, every time
      if (found.revoked?.revokedReason === "owner_removed") throw ownerRemoved(found.revoked);
      throw new TreasuryError(
        "unauthorized",
        `invalid credential: ${found.reason}`,
        {},
        { "WWW-Authenticate": 'Bearer realm="treasury", error="invalid_token"' },
      );
    }
    if (!found.key.treasuryId) {
      throw new TreasuryError("key_not_bound", "this API key is not bound to a treasury yet; the reviewer binds live keys during onboarding");
    }
    await owners.confirm(found.key, !READS.has(req.method));
    const credential: Credential = { kind: "bearer", scope: `key:${found.key.id}`, treasuryId: found.key.treasuryId, subject: found.key.id };
    res.locals.credential = credential;
  };
}
