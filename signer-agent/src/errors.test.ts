/** The signer agent's one error model: each class a SignerAgentError with its code, name and cause; each code's exit status declared once. */
import { describe, expect, it } from "vitest";
import { EXIT_CODES, EXIT_STATUS, EXIT_STATUSES } from "./cli/exit-codes";
import {
  AlreadyRegisteredError,
  CapExceeded,
  EnvelopeError,
  ExecutedByService,
  GatewayError,
  GatewayUnreachable,
  KeystoreError,
  PreflightError,
  RefusedError,
  SIGNER_ERROR_CODES,
  SignerAgentError,
  StatementMismatch,
  UsageError,
} from "./errors";

describe("the signer agent's errors", () => {
  it("each is a SignerAgentError of its own name, its code one of the closed set, its fields kept", () => {
    const errors: [SignerAgentError, string, string][] = [
      [new RefusedError("policy", "not this wallet", { error: "x" }), "RefusedError", "refused"],
      [new PreflightError("no contract"), "PreflightError", "preflight_failed"],
      [new CapExceeded("over the cap"), "CapExceeded", "cap_exceeded"],
      [new UsageError("run", "missing <action>"), "UsageError", "usage"],
      [new EnvelopeError("envelope_expired", "expired"), "EnvelopeError", "envelope_expired"],
      [new KeystoreError("wrong_passphrase", "no"), "KeystoreError", "wrong_passphrase"],
      [new GatewayError(404, "gateway_refused", "GET /x: 404", { error: "treasury_not_found" }), "GatewayError", "gateway_refused"],
      [new GatewayUnreachable("no answer"), "GatewayUnreachable", "gateway_unreachable"],
      [new AlreadyRegisteredError("0x1", "trs_1", "already registered"), "AlreadyRegisteredError", "already_registered"],
      [new StatementMismatch("not signed"), "StatementMismatch", "statement_mismatch"],
      [new ExecutedByService("deposit", {}), "ExecutedByService", "executed_by_service"],
      [new SignerAgentError("safe_check_failed", "a delegatecall inside the batch"), "SignerAgentError", "safe_check_failed"],
    ];
    for (const [err, name, code] of errors) {
      expect(err).toBeInstanceOf(SignerAgentError);
      expect(err).toBeInstanceOf(Error);
      expect([err.name, err.code, SIGNER_ERROR_CODES.includes(err.code)]).toEqual([name, code, true]);
      expect(err.shortMessage).toBe(err.message);
    }
    const refused = errors[0]![0] as RefusedError;
    expect([refused.stage, refused.body]).toEqual(["policy", { error: "x" }]);
    expect((errors[6]![0] as GatewayError).gatewayCode).toBe("treasury_not_found");
    expect(new GatewayError(502, "gateway_refused", "502", { error: "no_such_code" }).gatewayCode).toBeUndefined();
  });

  it("keeps its cause, its message adding the cause's details unless the short message says them", () => {
    const cause = new TypeError("fetch failed");
    const err = new GatewayUnreachable("the gateway at http://x does not answer (ECONNREFUSED)", { cause });
    expect([err.cause, err.shortMessage, err.message]).toEqual([
      cause,
      "the gateway at http://x does not answer (ECONNREFUSED)",
      "the gateway at http://x does not answer (ECONNREFUSED)\n\nDetails: fetch failed",
    ]);
    const wrapped = new RefusedError("preflight", "the call reverts", undefined, { cause: new PreflightError("the call reverts") });
    expect([wrapped.message, (wrapped.cause as SignerAgentError).code]).toEqual(["the call reverts", "preflight_failed"]);
  });
});

describe("the exit codes", () => {
  it("each code has its exit status in one table, and every status it uses is one the help explains", () => {
    expect(Object.keys(EXIT_STATUS).sort()).toEqual([...SIGNER_ERROR_CODES].sort());
    expect([...new Set(Object.values(EXIT_STATUS))].sort()).toEqual([1, 2, 3]);
    expect(Object.keys(EXIT_STATUSES)).toEqual(["0", "1", "2", "3"]);
    expect(EXIT_CODES).toBe(
      "exit codes: 0 done; 1 failed (gateway, chain or keystore: the message says which); 2 usage error (the argument, flag or input at fault is named); 3 refused (by the policy, the preflight or the gateway)",
    );
    expect([EXIT_STATUS.usage, EXIT_STATUS.not_an_envelope, EXIT_STATUS.envelope_expired, EXIT_STATUS.refused, EXIT_STATUS.gateway_refused]).toEqual([
      2, 2, 3, 3, 1,
    ]);
  });
});
