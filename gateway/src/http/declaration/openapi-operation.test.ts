/** A route's OpenAPI operation: its answers (x402's added on a priced route) and each error status's codes. */
import { ErrorResponse } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";
import { describe, expect, it } from "vitest";
import { routeOf } from "../stages/harness.test-support";
import { openApiOperation, operationResponses, toOpenApiPath } from "./openapi-operation";

const price = { atomic: 1_000n, description: "p" };
const err = (description: string) => ({ description, schema: ErrorResponse });

describe("the OpenAPI operation", () => {
  it("lists each error status's codes in x-error-codes, only under the statuses it documents", () => {
    const op = openApiOperation(
      routeOf({
        method: "get",
        path: "/t/:id",
        request: { params: z.object({ id: z.string() }) },
        errors: ["treasury_not_found"],
        responses: { 200: { description: "ok" }, 400: err("bad id"), 404: err("none"), 429: err("limited") },
      }),
    );
    expect(op.path).toBe("/t/{id}");
    const codes = Object.fromEntries(Object.entries(op.responses).map(([s, r]) => [s, (r as unknown as Record<string, unknown>)["x-error-codes"]]));
    expect(codes).toEqual({ 200: undefined, 400: ["invalid_request"], 404: ["treasury_not_found"], 429: ["rate_limited"] });
  });

  it("a priced route: the 402, the payment refusals appended to its own statuses, settlement headers on a success", () => {
    const spec = routeOf({ security: "bearer_or_x402", price, idempotencyKey: true, responses: { 202: { description: "done" }, 409: err("conflict") } });
    expect(Object.keys(operationResponses(spec))).toEqual(["202", "400", "402", "409", "503"]);
    const op = openApiOperation(spec);
    const r = op.responses as unknown as Record<string, { description: string; headers: Record<string, unknown>; "x-error-codes"?: string[] }>;
    expect(r["409"]!.description).toMatch(/^conflict; payment_in_progress: /);
    expect(r["409"]!["x-error-codes"]).toEqual(["idempotency_in_progress", "payment_in_progress", "payment_identifier_reused"]);
    expect(r["402"]!["x-error-codes"]).toBeUndefined();
    expect(Object.keys(r["202"]!.headers)).toEqual(["X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-Id", "X-PAYMENT-RESPONSE", "PAYMENT-RESPONSE"]);
    expect(op.security).toEqual([{ bearerAuth: [] }, { x402Payment: [] }, { x402PaymentV2: [] }]);
    expect(Object.keys((op.request!.headers as z.ZodObject).shape)).toEqual(["Idempotency-Key"]);
  });

  it("paths in OpenAPI's form", () => {
    expect(toOpenApiPath("/a/:id/b/:tx_id")).toBe("/a/{id}/b/{tx_id}");
  });
});
