/**
 * Idempotency-Key semantics (spec 8), shared by REST and MCP: required,
 * 8 to 120 characters, scoped to the credential. Same key and same request:
 * the stored outcome again, byte for byte. Same key, other request: 422.
 * Same key while the first is running: 409. Typed answers are stored like
 * successes, except the transient 409 and 429; those and unexpected failures
 * free the key.
 */
import { createHash } from "node:crypto";
import { ApiError } from "../http/errors";
import type { IdempotencyStore } from "../store/idempotency-store";

export interface Outcome {
  status: number;
  headers: Record<string, string>;
  /** the serialized body, stored and replayed as is */
  body: string;
}

/** canonical JSON: object keys sorted, so the same body always fingerprints the same */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** the fingerprint of a state-changing call: operation and canonical body */
export function requestFingerprint(operation: string, body: unknown): string {
  return createHash("sha256").update(`${operation}\n${canonicalJson(body ?? null)}`).digest("hex");
}

export function checkIdempotencyKey(key: string | undefined): string {
  if (key === undefined || key.length < 8 || key.length > 120) {
    throw new ApiError(400, "invalid_request", "an Idempotency-Key is required for this call (8 to 120 characters, unique per state-changing call)", {
      details: [{ location: "header", field: "Idempotency-Key", message: key === undefined ? "required" : "must be 8 to 120 characters" }],
    });
  }
  return key;
}

export async function idempotent(
  store: IdempotencyStore,
  call: { scope: string; key: string | undefined; fingerprint: string; now: Date },
  run: () => Promise<Outcome>,
): Promise<Outcome & { replayed: boolean }> {
  const key = checkIdempotencyKey(call.key);
  const claim = store.claim(call.scope, key, call.fingerprint, call.now);
  if (claim.kind === "mismatch") {
    throw new ApiError(422, "idempotency_key_reused", "this Idempotency-Key was already used with a different request; use a fresh key");
  }
  if (claim.kind === "in_progress") {
    throw new ApiError(409, "idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry shortly", {}, { "Retry-After": "1" });
  }
  if (claim.kind === "replay") return { ...claim.response, replayed: true };
  let outcome: Outcome;
  try {
    outcome = await run();
  } catch (err) {
    store.release(call.scope, key);
    throw err;
  }
  // transient refusals (a conflicting operation, a rate limit) are not remembered: the same key may succeed later
  if (outcome.status === 409 || outcome.status === 429 || outcome.status >= 500) store.release(call.scope, key);
  else store.complete(call.scope, key, outcome);
  return { ...outcome, replayed: false };
}
