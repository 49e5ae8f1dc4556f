/** The closed table of error codes and the one place they meet HTTP. */
import { describe, expect, it } from "vitest";
import { ERROR_CODES, isErrorCode, TreasuryError } from "../lib/errors";
import { ApiError, HTTP_STATUS, statusOf } from "./errors";

describe("error codes", () => {
  it("every code has exactly one HTTP status, an error status, and nothing else has one", () => {
    expect(Object.keys(HTTP_STATUS).sort()).toEqual([...ERROR_CODES].sort());
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(HTTP_STATUS[code], code).toBeGreaterThanOrEqual(400);
    expect(statusOf(new TreasuryError("ltv_limit_exceeded", "x"))).toBe(403);
    expect(statusOf(new TreasuryError("chain_unavailable", "x"))).toBe(503);
    expect(ApiError).toBe(TreasuryError);
  });

  it("tells a code of the table from anything else", () => {
    expect(isErrorCode("insufficient_balance")).toBe(true);
    for (const other of ["payment_required", "", "INVALID_REQUEST", 400, undefined, null]) expect(isErrorCode(other)).toBe(false);
  });
});
