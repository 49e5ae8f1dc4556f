/**
 * The credential of an authenticated request, one shape for every kind
 * (a bearer API key, an x402 payer, or a wallet signed in with x402's sign-in-with-x on a downward leg).
 * Made by the authenticators (gateway/src/services/authenticator.ts, gateway/src/services/wallet-signature.ts, gateway/src/x402/payment-gate.ts);
 * a request carries it in `res.locals` (gateway/src/http/credential.ts).
 */
export interface Credential {
  kind: "bearer" | "x402" | "wallet_signature";
  /** stable identity for rate limits and idempotency scope, e.g. key:<id> or payer:<address> */
  scope: string;
  /** the treasury this credential acts on */
  treasuryId: string;
  /** bearer: the key id; x402: the payer address */
  subject: string;
}
