/**
 * An unpaid state-changing call's Idempotency-Key (services/idempotency.ts): the stored answer again for
 * the same key and request, 422 for the same key and another request, 409 while the first still runs;
 * else reserve, handle and release once, the key's lease kept with the request's slots. A `storeOnly`
 * request (a sandbox ledger action) makes the claim, the handler and the stored answer one database
 * transaction instead. The scope of a key is the credential's, else the route's own (the relay: the
 * transaction's signer), else public.
 */
import type { Request, Response } from "express";
import { TreasuryError } from "@treasury/core/lib/errors";
import { idempotent, requestFingerprint } from "../../services/idempotency";
import { isContention } from "../../store/db";
import type { AnyRouteSpec, HandlerContext } from "../route-spec";
import { runReserved } from "./reserve";
import { outcomeOf, sendOutcome } from "./respond";
import { holderOf, type RequestStage } from "./stage";
import { handlerContext } from "./validate";

export const idempotency: RequestStage = {
  name: "idempotency",
  takesPart: (spec) => spec.idempotencyKey === true,
  errors: (spec) => ["invalid_request", "idempotency_key_reused", "idempotency_in_progress", ...(spec.storeOnly ? (["conflicting_operation"] as const) : [])],
  // the last stage of a keyed call: a paid one never gets here (paid-write serves it)
  async run(state) {
    const { req, res, spec, hooks, now } = state;
    const call = {
      scope: await scopeOf(spec, req, res),
      key: req.header("idempotency-key"),
      fingerprint: requestFingerprint(`${req.method} ${req.path}`, req.body),
      now: now(),
      clock: now,
    };
    const atomic = await storeOnlyContext(spec, req, res);
    const outcome = atomic
      ? await hooks.transaction!(() =>
          idempotent(hooks.idempotency!, { ...call, leased: false }, () => outcomeOf(res, async () => spec.handler(atomic))),
        ).catch((err: unknown) => {
          // nothing was written: the store kept colliding with other requests (PostgreSQL, after its retries)
          if (isContention(err))
            throw new TreasuryError(
              "conflicting_operation",
              "another request of this treasury was being applied at the same moment; retry (nothing was done)",
              {},
              { "Retry-After": "1" },
            );
          throw err;
        })
      : await idempotent(hooks.idempotency!, { ...call, renewAlso: () => hooks.renewReservations?.(holderOf(res)) ?? Promise.resolve() }, () =>
          outcomeOf(res, () => runReserved(state)),
        );
    sendOutcome(res, outcome, outcome.replayed);
  },
};

async function scopeOf(spec: AnyRouteSpec, req: Request, res: Response): Promise<string> {
  const credential = res.locals.credential as { scope: string } | undefined;
  if (credential) return credential.scope;
  if (spec.idempotencyScope) return spec.idempotencyScope(handlerContext(spec, req, res));
  return "public";
}

/** the request's parsed context when the route says it is store-only; a request it cannot say that of (invalid, refused) takes the ordinary path, which answers it */
async function storeOnlyContext(spec: AnyRouteSpec, req: Request, res: Response): Promise<HandlerContext<unknown, unknown, unknown> | undefined> {
  if (!spec.storeOnly) return undefined;
  try {
    const c = handlerContext<unknown, unknown, unknown>(spec, req, res);
    return (await spec.storeOnly(c)) ? c : undefined;
  } catch {
    return undefined;
  }
}
