/**
 * The signer agent's typed errors, in one small module the command line loads
 * before anything heavy: each carries a message in plain words.
 */

/** the signer agent's refusal: by its policy, its preflight, the gateway or x402 (`stage`), with the gateway's answer when there was one. */
export class RefusedError extends Error {
  constructor(
    readonly stage: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/**
 * A keystore that cannot be used, said plainly: none at the path (create one with `signer-agent init`),
 * a passphrase that does not open it, or a file that is not a keystore. Never carries the passphrase.
 */
export class KeystoreError extends Error {
  constructor(
    readonly code: "no_keystore" | "wrong_passphrase" | "not_a_keystore" | "no_passphrase",
    message: string,
  ) {
    super(message);
  }
}

/** the wallet already stands behind a treasury, and a new registration was not wanted (register --only-if-new) */
export class AlreadyRegisteredError extends Error {
  constructor(
    readonly wallet: string,
    readonly treasuryId: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** the statement the gateway asked to sign is not a registration of this wallet in this mode */
export class StatementMismatch extends Error {}

/**
 * The gateway executed the action itself and answered its receipt (200), not an envelope (202): the treasury
 * the wallet's requests act on is managed (a `register --mode managed`, say). Nothing was signed; the receipt
 * is in `receipt`.
 */
export class ExecutedByService extends Error {
  constructor(
    readonly action: string,
    readonly receipt: Record<string, unknown>,
  ) {
    super(`the gateway executed the ${action} itself and answered its receipt (a managed treasury): nothing for the agent to sign`);
  }
}
