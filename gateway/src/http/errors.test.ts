/** The closed table of error codes and the one place they meet HTTP. */
import { describe, expect, it } from "vitest";
import { ERROR_CODES, isErrorCode, TreasuryError } from "@treasury/core/lib/errors";
import { errorBody, HTTP_STATUS, statusOf } from "./errors";

describe("error codes", () => {
  it("every code has exactly one HTTP status, an error status, and nothing else has one", () => {
    expect(Object.keys(HTTP_STATUS).sort()).toEqual([...ERROR_CODES].sort());
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(HTTP_STATUS[code], code).toBeGreaterThanOrEqual(400);
    expect(statusOf(new TreasuryError("ltv_limit_exceeded", "x"))).toBe(403);
    expect(statusOf(new TreasuryError("chain_unavailable", "x"))).toBe(503);
  });

  it("one error class: named, its short message is the body's, its cause kept for the logs and never sent", () => {
    const plain = new TreasuryError("not_found", "no receipt r_1");
    expect([plain.name, plain.message, plain.shortMessage, plain.cause]).toEqual(["TreasuryError", "no receipt r_1", "no receipt r_1", undefined]);
    expect(Object.keys(plain)).not.toContain("name");
    expect(String(plain)).toBe("TreasuryError: no receipt r_1");
    const rpc = new Error("HTTP request failed.\n\nURL: http://rpc.internal/key");
    const wrapped = new TreasuryError("chain_unavailable", "could not read the position on base", { chain: "base" }, { "Retry-After": "1" }, { cause: rpc });
    expect(wrapped).toBeInstanceOf(Error);
    expect(wrapped.cause).toBe(rpc);
    expect(wrapped.shortMessage).toBe("could not read the position on base");
    expect(wrapped.message).toBe("could not read the position on base\n\nDetails: HTTP request failed.\n\nURL: http://rpc.internal/key");
    const body = errorBody(wrapped, "req_1");
    expect(body).toEqual({ error: "chain_unavailable", message: "could not read the position on base", request_id: "req_1", chain: "base" });
    expect(JSON.stringify(body)).not.toContain("rpc.internal");
  });

  it("tells a code of the table from anything else", () => {
    expect(isErrorCode("insufficient_balance")).toBe(true);
    for (const other of ["payment_required", "", "INVALID_REQUEST", 400, undefined, null]) expect(isErrorCode(other)).toBe(false);
  });
});
