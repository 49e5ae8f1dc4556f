/** A declaration that contradicts itself is refused at registration, before anything of it is registered. */
import type { ErrorCode } from "@treasury/core/lib/errors";
import { ErrorResponse } from "@treasury/core/schemas/common";
import { describe, expect, it } from "vitest";
import type { IdempotencyStore } from "../../store/idempotency-store";
import { routeOf } from "../stages/harness.test-support";
import { checkDeclaration } from "./check";

const price = { atomic: 1_000n, description: "p" };

describe("checkDeclaration", () => {
  it("x402 and a price go together", () => {
    expect(() => checkDeclaration(routeOf({ security: "bearer_or_x402" }), {})).toThrow("POST /r accepts x402 but declares no price");
    expect(() => checkDeclaration(routeOf({ security: "bearer", price }), {})).toThrow("POST /r declares a price but does not accept x402");
    expect(() => checkDeclaration(routeOf({ security: "bearer_or_x402", price }), {})).not.toThrow();
  });

  it("an Idempotency-Key needs the store; storeOnly needs a key and transactions", () => {
    expect(() => checkDeclaration(routeOf({ idempotencyKey: true }), {})).toThrow("/r needs the idempotency store");
    const idempotency = {} as IdempotencyStore;
    expect(() => checkDeclaration(routeOf({ idempotencyKey: true, storeOnly: () => true }), { idempotency })).toThrow("POST /r declares storeOnly");
    expect(() => checkDeclaration(routeOf({ idempotencyKey: true, storeOnly: () => true }), { idempotency, transaction: (fn) => fn() })).not.toThrow();
  });

  it("every error a route declares is a code of the table, under a status it documents", () => {
    expect(() => checkDeclaration(routeOf({ errors: ["no_such_code" as ErrorCode] }), {})).toThrow(
      "POST /r declares the error no_such_code, which is not an error code",
    );
    expect(() => checkDeclaration(routeOf({ errors: ["treasury_not_found"] }), {})).toThrow(
      "POST /r declares the error treasury_not_found but documents no 404 response",
    );
    expect(() =>
      checkDeclaration(
        routeOf({ errors: ["treasury_not_found"], responses: { 200: { description: "ok" }, 404: { description: "none", schema: ErrorResponse } } }),
        {},
      ),
    ).not.toThrow();
    // a priced route documents the payment refusals' statuses itself
    expect(() => checkDeclaration(routeOf({ security: "bearer_or_x402", price, errors: ["chain_unavailable"] }), {})).not.toThrow();
  });
});
