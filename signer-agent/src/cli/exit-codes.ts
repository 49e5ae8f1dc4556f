/**
 * How the command line ends, declared once: what each exit status means (the help's "exit codes" line is
 * written from it) and the exit status of each of the signer agent's error codes (errors.ts), as the gateway
 * maps its codes to HTTP in one table. An error without a code (a chain that does not answer, say) fails: 1.
 */
import type { SignerErrorCode } from "../errors";

/** what each exit status means, in the order the help says them */
export const EXIT_STATUSES = {
  0: "done",
  1: "failed (gateway, chain or keystore: the message says which)",
  2: "usage error (the argument, flag or input at fault is named)",
  3: "refused (by the policy, the preflight or the gateway)",
} as const;

export type ExitStatus = keyof typeof EXIT_STATUSES;

/** the exit status of each code: 2 for input at fault, 3 for a refusal, 1 for everything that failed */
export const EXIT_STATUS = {
  usage: 2,
  envelope_not_json: 2,
  not_an_envelope: 2,
  intent_missing: 2,
  envelope_expired: 3,
  refused: 3,
  preflight_failed: 3,
  cap_exceeded: 3,
  safe_check_failed: 1,
  no_keystore: 1,
  wrong_passphrase: 1,
  not_a_keystore: 1,
  no_passphrase: 1,
  keystore_exists: 1,
  raw_key_not_allowed: 1,
  no_policy: 1,
  invalid_policy: 1,
  operator_not_set_up: 1,
  no_safe: 1,
  contracts_not_built: 1,
  safe_transaction_reverted: 1,
  safe_execution_failed: 1,
  safe_execution_timed_out: 1,
  event_timed_out: 1,
  gateway_refused: 1,
  gateway_not_json: 1,
  gateway_unreachable: 1,
  automation_unconfigured: 1,
  already_registered: 1,
  statement_mismatch: 1,
  executed_by_service: 1,
} as const satisfies Record<SignerErrorCode, Exclude<ExitStatus, 0>>;

/** the help's line: each exit status and what it means */
export const EXIT_CODES = `exit codes: ${Object.entries(EXIT_STATUSES)
  .map(([status, meaning]) => `${status} ${meaning}`)
  .join("; ")}`;
