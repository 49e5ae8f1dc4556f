/**
 * The signer agent's one error model, as the gateway's (TreasuryError, @treasury/core/lib/errors): every error it
 * throws is a SignerAgentError with a code of one closed set, SIGNER_ERROR_CODES, its `shortMessage` in plain words
 * and the error it wraps as its ES2022 `cause`. The named classes below extend it, each with the fields its callers
 * read (a refusal's stage, a usage error's command). How a code ends the command line (its exit code) is decided
 * in one place, cli/exit-codes.ts. A small module the command line loads before anything heavy.
 */
import { isErrorCode, type ErrorCode } from "@treasury/core/lib/errors";

export const SIGNER_ERROR_CODES = [
  // the command line: an argument, a flag or a value at fault (UsageError)
  "usage",
  // what was handed over as an envelope (EnvelopeError)
  "envelope_not_json",
  "not_an_envelope",
  "intent_missing",
  "envelope_expired",
  // refused before signing: by the policy, the preflight, the gateway, x402 or the relay (RefusedError, its stage)
  "refused",
  "preflight_failed",
  "cap_exceeded",
  // the operator's own checks of a Safe transaction before it signs or executes it (operator.ts)
  "safe_check_failed",
  // the key (KeystoreError)
  "no_keystore",
  "wrong_passphrase",
  "not_a_keystore",
  "no_passphrase",
  "keystore_exists",
  "raw_key_not_allowed",
  // the agent's policy file
  "no_policy",
  "invalid_policy",
  // the operator's Safe, its state and its transactions
  "operator_not_set_up",
  "no_safe",
  "contracts_not_built",
  "safe_transaction_reverted",
  "safe_execution_failed",
  "safe_execution_timed_out",
  "event_timed_out",
  // the gateway, for the command line's own calls (GatewayError, GatewayUnreachable)
  "gateway_refused",
  "gateway_not_json",
  "gateway_unreachable",
  "automation_unconfigured",
  // a registration
  "already_registered",
  "statement_mismatch",
  // a managed treasury: the service executed the action, nothing to sign (ExecutedByService)
  "executed_by_service",
] as const;

export type SignerErrorCode = (typeof SIGNER_ERROR_CODES)[number];

/** the details `message` adds to the short message: its cause's message, unless the short message says it already */
function withDetails(shortMessage: string, cause: unknown): string {
  if (cause === undefined) return shortMessage;
  const details = cause instanceof Error ? cause.message : String(cause);
  return shortMessage.includes(details) ? shortMessage : `${shortMessage}\n\nDetails: ${details}`;
}

/**
 * The one error class of the signer agent (each named error below extends it). Like TreasuryError and viem's
 * errors: `shortMessage` is what a person is told (the command line prints it); `message` adds the details of its
 * `cause`, for the logs.
 */
export class SignerAgentError extends Error {
  /** the message without details: what the command line prints */
  readonly shortMessage: string;

  constructor(
    readonly code: SignerErrorCode,
    shortMessage: string,
    /** what caused it (another error, kept as `cause`): its message is the details of `message` */
    options: { cause?: unknown } = {},
  ) {
    super(withDetails(shortMessage, options.cause), options.cause === undefined ? undefined : { cause: options.cause });
    this.shortMessage = shortMessage;
  }
}

/** where the agent refused: its policy, its preflight on the fork, the gateway's answer, x402's price, the relay */
export type RefusalStage = "policy" | "preflight" | "gateway" | "x402" | "relay";

/** the signer agent's refusal: by its policy, its preflight, the gateway or x402 (`stage`), with the gateway's answer when there was one. */
export class RefusedError extends SignerAgentError {
  declare readonly code: "refused";
  constructor(
    readonly stage: RefusalStage,
    message: string,
    readonly body?: unknown,
    options: { cause?: unknown } = {},
  ) {
    super("refused", message, options);
  }
}

/**
 * Why preflight on the fork refused a transaction (the agent answers it as a RefusedError at stage preflight): for
 * an Aave revert, its error's name, and the gateway's code for it when Aave refused a borrow (`borrow_refused`) or a
 * call that would leave the position liquidatable (`would_be_liquidatable`).
 */
export class PreflightError extends SignerAgentError {
  declare readonly code: "preflight_failed";
  readonly aaveError: string | undefined;
  readonly refusal: ErrorCode | undefined;
  constructor(message: string, revert: { aaveError?: string; refusal?: ErrorCode } = {}) {
    super("preflight_failed", message);
    this.aaveError = revert.aaveError;
    this.refusal = revert.refusal;
  }
}

/** a signature that would take the day past the policy's daily cap (caps.ts) */
export class CapExceeded extends SignerAgentError {
  declare readonly code: "cap_exceeded";
  constructor(message: string) {
    super("cap_exceeded", message);
  }
}

/** the command line at fault (cli/args.ts, cli/amounts.ts): the word and why, for `command` */
export class UsageError extends SignerAgentError {
  declare readonly code: "usage";
  constructor(
    /** the command the usage is about ("run", "operator approve"), or "" for the tool itself */
    readonly command: string,
    message: string,
  ) {
    super("usage", message);
  }
}

export type EnvelopeProblem = "envelope_not_json" | "not_an_envelope" | "intent_missing" | "envelope_expired";

/** what is wrong with what was handed over as an envelope (envelope.ts): not one, one that lacks what to check it against, or one refused as stale */
export class EnvelopeError extends SignerAgentError {
  declare readonly code: EnvelopeProblem;
  constructor(code: EnvelopeProblem, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
  }
}

export type KeystoreProblem = "no_keystore" | "wrong_passphrase" | "not_a_keystore" | "no_passphrase" | "keystore_exists" | "raw_key_not_allowed";

/**
 * A keystore that cannot be used, said plainly: none at the path (create one with `signer-agent init`),
 * a passphrase that does not open it, or a file that is not a keystore; one that would be overwritten; a raw key
 * without its development flag. Never carries the passphrase.
 */
export class KeystoreError extends SignerAgentError {
  declare readonly code: KeystoreProblem;
  constructor(code: KeystoreProblem, message: string) {
    super(code, message);
  }
}

/** the gateway's answer to one of the command line's own calls (register, summary, the operator's): a refusal, or not JSON */
export class GatewayError extends SignerAgentError {
  declare readonly code: "gateway_refused" | "gateway_not_json";
  /** the gateway's own code (its body's `error`), when it is one of its codes */
  readonly gatewayCode: ErrorCode | undefined;
  constructor(
    readonly status: number,
    code: "gateway_refused" | "gateway_not_json",
    message: string,
    readonly body?: Record<string, unknown>,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.gatewayCode = isErrorCode(body?.error) ? body.error : undefined;
  }
}

/** the gateway does not answer at all, worded for a person */
export class GatewayUnreachable extends SignerAgentError {
  declare readonly code: "gateway_unreachable";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("gateway_unreachable", message, options);
  }
}

/** the wallet already stands behind a treasury, and a new registration was not wanted (register --only-if-new) */
export class AlreadyRegisteredError extends SignerAgentError {
  declare readonly code: "already_registered";
  constructor(
    readonly wallet: string,
    readonly treasuryId: string | undefined,
    message: string,
  ) {
    super("already_registered", message);
  }
}

/** the statement the gateway asked to sign is not a registration of this wallet in this mode */
export class StatementMismatch extends SignerAgentError {
  declare readonly code: "statement_mismatch";
  constructor(message: string) {
    super("statement_mismatch", message);
  }
}

/**
 * The gateway executed the action itself and answered its receipt (200), not an envelope (202): the treasury
 * the wallet's requests act on is managed (a `register --mode managed`, say). Nothing was signed; the receipt
 * is in `receipt`.
 */
export class ExecutedByService extends SignerAgentError {
  declare readonly code: "executed_by_service";
  constructor(
    readonly action: string,
    readonly receipt: Record<string, unknown>,
  ) {
    super("executed_by_service", `the gateway executed the ${action} itself and answered its receipt (a managed treasury): nothing for the agent to sign`);
  }
}

// each class's name on its prototype, as Error's own `name` is (not an own field of every error)
for (const c of [
  SignerAgentError,
  RefusedError,
  PreflightError,
  CapExceeded,
  UsageError,
  EnvelopeError,
  KeystoreError,
  GatewayError,
  GatewayUnreachable,
  AlreadyRegisteredError,
  StatementMismatch,
  ExecutedByService,
])
  c.prototype.name = c.name;
