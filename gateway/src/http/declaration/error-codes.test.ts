/** An operation's error codes, derived from its declaration: the edge, validation, its stages and its own. */
import { ERROR_CODES } from "@treasury/core/lib/errors";
import { z } from "@treasury/core/schemas/zod";
import { describe, expect, it } from "vitest";
import { HTTP_STATUS } from "../errors";
import { routeOf } from "../stages/harness.test-support";
import { errorCodesByStatus, errorCodesOf } from "./error-codes";

const price = { atomic: 1_000n, description: "p" };
const body = z.object({ a: z.number() });

describe("error codes of an operation", () => {
  it("a public read without input: only the rate limit", () => {
    expect(errorCodesOf(routeOf({ method: "get" }))).toEqual(["rate_limited"]);
  });

  it("a public write with a body: the body's and validation's codes, and its own", () => {
    expect(errorCodesOf(routeOf({ request: { body }, errors: ["treasury_not_found", "invalid_request"] }))).toEqual([
      "invalid_request",
      "payload_too_large",
      "unsupported_media_type",
      "treasury_not_found",
      "rate_limited",
    ]);
  });

  it("a bearer read: the authenticator's refusals", () => {
    expect(errorCodesOf(routeOf({ method: "get", security: "bearer" }))).toEqual([
      "unauthorized",
      "owner_removed",
      "key_not_bound",
      "rate_limited",
      "chain_unavailable",
    ]);
  });

  it("a priced action with an Idempotency-Key: payment, payment-identifier and idempotency codes, by status", () => {
    const byStatus = errorCodesByStatus(
      routeOf({ security: "bearer_or_x402", price, idempotencyKey: true, request: { body }, errors: ["ltv_limit_exceeded", "conflicting_operation"] }),
    );
    expect(Object.fromEntries(byStatus)).toEqual({
      400: ["invalid_request", "invalid_payment_identifier"],
      401: ["unauthorized", "owner_removed"],
      403: ["key_not_bound", "ltv_limit_exceeded"],
      409: ["conflicting_operation", "idempotency_in_progress", "payment_in_progress", "payment_identifier_reused"],
      413: ["payload_too_large"],
      415: ["unsupported_media_type"],
      422: ["idempotency_key_reused"],
      429: ["rate_limited"],
      503: ["chain_unavailable", "payment_facilitator_unavailable", "payment_settlement_unknown"],
    });
  });

  it("a storeOnly route may answer a conflict of the store", () => {
    expect(errorCodesOf(routeOf({ idempotencyKey: true, storeOnly: () => true }))).toContain("conflicting_operation");
    expect(errorCodesOf(routeOf({ idempotencyKey: true }))).not.toContain("conflicting_operation");
  });

  it("every code is listed once, in the table's order, under its own status", () => {
    const codes = errorCodesOf(
      routeOf({ security: "bearer_or_x402", price, idempotencyKey: true, storeOnly: () => true, request: { body }, errors: [...ERROR_CODES] }),
    );
    expect(codes).toEqual([...ERROR_CODES]);
    for (const [status, list] of errorCodesByStatus(routeOf({ security: "bearer", request: { body } })))
      for (const code of list) expect(HTTP_STATUS[code]).toBe(status);
  });
});
