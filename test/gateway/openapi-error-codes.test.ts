/**
 * Each operation of the served OpenAPI document lists, under each error status it documents, the codes it
 * can answer with (`x-error-codes`): derived from the request stages the route goes through, and the
 * route's own (`errors` in its declaration). Every code listed is a code of the table, under its status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES } from "@treasury/core/lib/errors";
import { HTTP_STATUS } from "../../gateway/src/http/errors";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

type Operation = { responses: Record<string, { "x-error-codes"?: string[] }> };
let gw: TestGateway;
let doc: { paths: Record<string, Record<string, Operation>> };

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
});
afterAll(() => gw?.close());

/** an operation's codes by status */
const codesOf = (method: string, path: string) =>
  Object.fromEntries(Object.entries(doc.paths[path]![method]!.responses).flatMap(([status, r]) => (r["x-error-codes"] ? [[status, r["x-error-codes"]]] : [])));

describe("error codes per operation", () => {
  it("a public read by id: its input's, the rate limit's and its own", () => {
    expect(codesOf("get", "/api/v1/treasuries/{id}")).toEqual({ 400: ["invalid_request"], 404: ["treasury_not_found"], 429: ["rate_limited"] });
  });

  it("a sign-in: the refusals of the console's service, beside validation and the rate limit", () => {
    expect(codesOf("post", "/api/v1/console/sessions")).toEqual({
      400: ["invalid_request"],
      401: ["unauthorized"],
      403: ["not_an_owner"],
      404: ["treasury_not_found"],
      429: ["rate_limited"],
      503: ["chain_unavailable"],
    });
  });

  it("a bearer write: the authenticator's refusals beside the route's own", () => {
    expect(codesOf("post", "/api/v1/safe-transactions/{id}/signatures")).toEqual({
      400: ["invalid_request"],
      401: ["unauthorized", "owner_removed"],
      403: ["key_not_bound", "not_an_owner", "ownership_not_proven"],
      404: ["not_found"],
      409: ["safe_transaction_not_open"],
      429: ["rate_limited"],
      503: ["chain_unavailable"],
    });
  });

  it("a public route without input answers only the rate limit", () => {
    expect(codesOf("get", "/api/v1/public/gateway-status")).toEqual({ 429: ["rate_limited"] });
  });

  it("a priced action: the payment, payment-identifier and Idempotency-Key codes (those of the x402 and idempotency stages)", () => {
    const codes = codesOf("post", "/api/v1/deposits");
    expect(codes[409]).toEqual(expect.arrayContaining(["idempotency_in_progress", "payment_in_progress", "payment_identifier_reused"]));
    expect(codes[400]).toEqual(expect.arrayContaining(["invalid_request", "invalid_payment_identifier"]));
    expect(codes[503]).toEqual(expect.arrayContaining(["payment_facilitator_unavailable", "payment_settlement_unknown"]));
  });

  it("every code listed is a code of the table, under its own status, once", () => {
    let listed = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, r] of Object.entries(op.responses)) {
          const codes = r["x-error-codes"] ?? [];
          listed += codes.length;
          expect(new Set(codes).size, `${method} ${path} ${status}`).toBe(codes.length);
          for (const code of codes) {
            expect(ERROR_CODES, `${method} ${path} ${status}`).toContain(code);
            expect(HTTP_STATUS[code as keyof typeof HTTP_STATUS], `${method} ${path} ${status} ${code}`).toBe(Number(status));
          }
        }
      }
    }
    expect(listed).toBeGreaterThan(100);
  });
});
