/**
 * Every error the service answers, as a closed set of codes (the `error` field
 * of every error body), independent of the transport: services, the chain
 * adapter and the domain throw a TreasuryError with a code; how a code travels
 * (its HTTP status, an MCP tool error carrying the same body) is decided in one
 * place, gateway/src/http/errors.ts. Like x402's error constants or viem's error classes, a
 * code is a name a client can branch on, never a number.
 */
export const ERROR_CODES = [
  // the request
  "invalid_request",
  "invalid_payment_identifier",
  "invalid_signed_transaction",
  "chain_id_mismatch",
  "to_mismatch",
  "data_mismatch",
  "value_mismatch",
  "signer_mismatch",
  "invalid_ownership_proof",
  "invalid_safe_proof",
  "invalid_module",
  "insufficient_balance",
  "insufficient_collateral",
  "insufficient_debt",
  "no_debt",
  // a webhook target the service will not call: not https (loopback http on a local stack), or an address that is not public
  "webhook_url_refused",
  "payload_too_large",
  "unsupported_media_type",
  "method_not_allowed",
  // who is asking
  "unauthorized",
  // a console session revoked because its owner is no longer an owner of the Safe
  "owner_removed",
  "key_not_bound",
  "host_not_allowed",
  "origin_not_allowed",
  "not_an_owner",
  "ownership_not_proven",
  // the rules
  "ltv_limit_exceeded",
  // what is not there
  "not_found",
  "treasury_not_found",
  "access_request_not_found",
  "envelope_not_found",
  "tool_not_found",
  "envelope_expired",
  // conflicts with what is in flight or done
  "conflicting_operation",
  "invalid_transition",
  "not_managed",
  "already_relayed",
  "nonce_not_next",
  "step_in_flight",
  "step_out_of_order",
  "prerequisite_steps_required",
  "idempotency_in_progress",
  "idempotency_key_reused",
  "payment_in_progress",
  "payment_identifier_reused",
  "safe_transaction_not_open",
  "safe_nonce_used",
  // the chain said no
  "transaction_would_revert",
  // Aave refuses the borrow (its collateral, a cap, the reserve), or the call would leave the position liquidatable
  "borrow_refused",
  "would_be_liquidatable",
  "transaction_reverted",
  "broadcast_rejected",
  "sandbox_execution_failed",
  // try again later
  "rate_limited",
  "gas_budget_exhausted",
  "chain_unavailable",
  "sandbox_unavailable",
  "payment_facilitator_unavailable",
  "payment_settlement_unknown",
  "automation_unconfigured",
  "internal_error",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN = new Set<string>(ERROR_CODES);
export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === "string" && KNOWN.has(code);

/**
 * The one error class of the service, whatever the transport (REST and MCP answer it as its code's typed
 * body, gateway/src/http/errors.ts). Like viem's errors: `shortMessage` is what the caller is told (the body's
 * `message`); `message` adds the details of its `cause` (ES2022), for the logs, never sent.
 */
export class TreasuryError extends Error {
  /** the message without details: the body's `message` */
  readonly shortMessage: string;

  constructor(
    readonly code: ErrorCode,
    shortMessage: string,
    /** contextual fields added to the body (e.g. safe_amount) */
    readonly fields: Record<string, unknown> = {},
    /** transport hints (e.g. Retry-After) */
    readonly headers: Record<string, string> = {},
    /** what caused it (another error, kept as `cause`): its message is the details of `message` */
    options: { cause?: unknown } = {},
  ) {
    super(
      options.cause === undefined
        ? shortMessage
        : `${shortMessage}\n\nDetails: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.shortMessage = shortMessage;
  }
}
// on the prototype, as Error's own `name` is: not an own field of every error
TreasuryError.prototype.name = "TreasuryError";
