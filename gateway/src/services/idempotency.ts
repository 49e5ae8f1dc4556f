/**
 * Idempotency-Key semantics (spec 8), shared by REST and MCP: required,
 * 8 to 120 characters of printable ASCII, scoped to the credential. Same key and same request:
 * the stored outcome again, byte for byte. Same key, other request: 422.
 * Same key while the first is running: 409. Typed answers are stored like
 * successes, except the transient 409 and 429; those and unexpected failures
 * free the key.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../lib/canonical-json";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { IdempotencyStore } from "../store/idempotency-store";
import { IdempotencyKey } from "../schemas/idempotency-key";
import { LEASE_MS, newHolder } from "../store/lease";

export interface Outcome {
  status: number;
  headers: Record<string, string>;
  /** the serialized body, stored and replayed as is */
  body: string;
}

/** the fingerprint of a state-changing call: operation and canonical body */
export function requestFingerprint(operation: string, body: unknown): string {
  return createHash("sha256")
    .update(`${operation}\n${canonicalJson(body ?? null)}`)
    .digest("hex");
}

/** the request's Idempotency-Key as the document declares it (schemas/idempotency-key.ts), else the typed 400 */
export function checkIdempotencyKey(key: string | undefined): string {
  if (key !== undefined && IdempotencyKey.safeParse(key).success) return key;
  const why =
    key === undefined
      ? "required"
      : key.length < 8 || key.length > 120
        ? "must be 8 to 120 characters"
        : "must be printable ASCII (0x20-0x7E), with no space at either end";
  throw new TreasuryError(
    "invalid_request",
    "an Idempotency-Key is required for this call (8 to 120 characters of printable ASCII, unique per state-changing call)",
    { details: [{ location: "header", field: "Idempotency-Key", message: why }] },
  );
}

/** keep a lease alive while `run` works: renew every third of its length; stops when `run` ends */
export async function whileLeased<T>(renew: () => Promise<unknown>, run: () => Promise<T>): Promise<T> {
  const every = Math.max(100, Math.floor(LEASE_MS / 3));
  const timer = setInterval(() => void renew().catch(() => undefined), every);
  timer.unref();
  try {
    return await run();
  } finally {
    clearInterval(timer);
  }
}

export async function idempotent(
  store: IdempotencyStore,
  /** leased false: the call runs inside one database transaction with `run`, where no one else sees the claim until it is complete, so there is no lease to keep */
  call: { scope: string; key: string | undefined; fingerprint: string; now: Date; clock?: () => Date; renewAlso?: () => Promise<unknown>; leased?: boolean },
  run: () => Promise<Outcome>,
): Promise<Outcome & { replayed: boolean }> {
  const key = checkIdempotencyKey(call.key);
  const holder = newHolder("req");
  const claim = await store.claim(call.scope, key, call.fingerprint, call.now, holder);
  if (claim.kind === "mismatch") {
    throw new TreasuryError("idempotency_key_reused", "this Idempotency-Key was already used with a different request; use a fresh key");
  }
  if (claim.kind === "in_progress") {
    throw new TreasuryError(
      "idempotency_in_progress",
      "a request with this Idempotency-Key is still being processed; retry shortly",
      {},
      { "Retry-After": "1" },
    );
  }
  if (claim.kind === "replay") return { ...claim.response, replayed: true };
  const clock = call.clock ?? (() => new Date());
  let outcome: Outcome;
  try {
    outcome =
      call.leased === false ? await run() : await whileLeased(() => Promise.all([store.renew(call.scope, key, holder, clock()), call.renewAlso?.()]), run);
  } catch (err) {
    // inside the caller's transaction the claim goes with its rollback (and a failed PostgreSQL transaction takes no more statements)
    if (call.leased !== false) await store.release(call.scope, key, holder);
    throw err;
  }
  // transient refusals (a conflicting operation, a rate limit) are not remembered: the same key may succeed later
  if (outcome.status === 409 || outcome.status === 429 || outcome.status >= 500) await store.release(call.scope, key, holder);
  else await store.complete(call.scope, key, outcome, holder);
  return { ...outcome, replayed: false };
}
