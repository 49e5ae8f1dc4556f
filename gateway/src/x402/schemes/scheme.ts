/**
 * What an x402 scheme supplies the payment gate (after `@x402/core`'s SchemeNetworkServer): a scheme is one
 * folder (`schemes/<name>/`) exporting a `PaymentScheme`, and a line in the registry (`schemes/index.ts`). The
 * gate, the 402's offers, the price list, the rate limit's identity and the facilitator's dispatch iterate the
 * registry; the one authorize template (`authorize.ts`) and the one claim (`payment-claim.ts`) do the rest:
 *
 *   recognizes  is this sent proof the scheme's (whatever its content)?          (read once per request)
 *   decode      the proof's own fields, or undefined when malformed             (read once per request)
 *   offers      the 402's `accepts` entries for a route's price (none: not offered on that route)
 *   match       why the proof cannot pay this route (pure), or null
 *   verify      the facilitator's word or a local signature check; what to lock: (payer, nonce)
 *   payer       whose signature the proof carries (payment-identifier's scope)
 *   validNow    its payer when it could pay this route now, from the proof and the store (the rate limit's identity)
 *   settle      move the money once (the template keeps the lock, the release and the unknown outcome)
 *   facilitator the scheme name the local facilitator dispatches on (facilitator/local-facilitator.ts)
 *
 * No scheme sees HTTP: a request is its method, path and headers; a refusal is data the HTTP stage writes.
 */
import type { Credential } from "@treasury/core/domain/credential";
import type { PaymentRequirements } from "x402/types";
import type { FacilitatorClient } from "../facilitator-client";
import type { PaymentGateContext, PaymentGateOptions } from "../gate-context";
import type { KnownPayers } from "../known-payers";
import type { RequirementsV2, X402Version } from "../payment-match";
import type { RoutePrice } from "../prices";

/** a route as the price list names it */
export interface PricedRoute {
  method: string;
  path: string;
}

/** what the gate sees of a request: no HTTP framework's type */
export interface PaymentRequest extends PricedRoute {
  header(name: string): string | undefined;
}

/** the proof a request sent, before any scheme reads it: its version, the header's text, a v2 header's object */
export interface RawPayment {
  version: X402Version;
  header: string;
  /** a version 2 header's object (base64 JSON), else undefined */
  raw: Record<string, unknown> | undefined;
}

/** a request's proof, decoded once by the scheme that recognizes it (gateway/src/x402/sent-payment.ts) */
export interface SentPayment<P = unknown> extends RawPayment {
  scheme: PaymentScheme<P>;
  /** the scheme's decoding, undefined when malformed */
  proof: P | undefined;
}

/** a 402 refusal as data: its reason, its typed fields, and a scheme's corrective state for its own offer */
export interface Refusal {
  error: string;
  extra?: Record<string, unknown>;
  /** the refusing scheme's state, carried in its own offer of the 402 (a session's channel) */
  state?: Record<string, unknown>;
}

/** the requirements the gate offers a priced route in (route-requirements.ts) */
export interface SchemeRequirements {
  payTo: `0x${string}`;
  /** x402 version 1's `exact` requirements of this path */
  v1(path: string, p: RoutePrice): PaymentRequirements;
  /** x402 version 2's `exact` requirements */
  v2(p: RoutePrice): RequirementsV2;
}

/** what a scheme is given: the gate's context and options, the requirements, the facilitator, the payers paid by */
export interface SchemeEnv {
  ctx: PaymentGateContext;
  opts: PaymentGateOptions;
  requirements: SchemeRequirements;
  facilitator: FacilitatorClient;
  knownPayers: KnownPayers;
}

/** a route a proof is matched to: its path, its price, the time (seconds) */
export interface RouteMatch {
  route: PricedRoute;
  price: RoutePrice;
  nowSeconds: bigint;
}

/**
 * A proof verified, ready to lock: its payer and the lock's nonce (scheme-prefixed: `session:`, `upto:`), and
 * what its settlement needs (`settling`, the scheme's own). `usedRefusal`: how a proof whose lock is spent is
 * refused (default `payment_already_used`); `onlyServedSettled`: the proof pays nothing new (a voucher charged
 * already, sent again): it is served only as a dead request's settled payment, and refused so otherwise.
 */
export interface Verified<S = unknown> {
  payer: `0x${string}`;
  nonce: string;
  settling: S;
  /**
   * the proof holds nothing before its charge: no lock is taken (the template resolves the payer's treasury only),
   * and the scheme's settle writes the charge and the payment's row, settled (with the answer's status when it is
   * given: its outcome), in one store transaction that one request alone can commit
   */
  lockFree?: boolean;
  usedRefusal?: Refusal;
  onlyServedSettled?: Refusal;
}

/** the lock of a verified proof: whose payment, on which treasury, under which holder */
export interface LockedPayment<S = unknown> extends Verified<S> {
  route: PricedRoute;
  price: RoutePrice;
  treasuryId: string;
  /** the treasury was created for this payment (removed again if it is released) */
  created: boolean;
  holder: string;
  /** taken over from a dead request (maybe settled before it died) */
  takenOver: boolean;
  /** a dead request's payment that was settled and never served: this request is its service, free */
  alreadySettled?: { transaction: string };
  /** what the scheme's `atLock` did inside the lock's transaction */
  atLock?: unknown;
}

/**
 * A scheme's settlement, judged: settled (the payment's row marked settled by the scheme, and the answer's
 * settlement headers), failed (nothing was charged: the template releases the lock and refuses), spent (the
 * money moved but the call is not served: refused, the lock kept), or unknown (the facilitator did not answer:
 * kept pending with what to settle again).
 */
export type SchemeSettlement =
  | { kind: "settled"; headers: Record<string, string> }
  | { kind: "failed"; refusal: Refusal }
  | { kind: "spent"; refusal: Refusal }
  | { kind: "unknown"; settlement: string };

/** an x402 scheme: `P` its decoded proof, `S` what its settlement needs */
export interface PaymentScheme<P = unknown, S = unknown> {
  /** the scheme's name as x402 writes it in `accepted.scheme` (v1's is `exact`) */
  readonly name: string;
  recognizes(sent: RawPayment): boolean;
  decode(sent: RawPayment): P | undefined;
  /** the 402's accepts entries of this scheme for a route (none: the route does not take it); `state`: this scheme's corrective state */
  offers(env: SchemeEnv, price: RoutePrice, state?: Record<string, unknown>): RequirementsV2[];
  match(env: SchemeEnv, proof: P, at: RouteMatch, sent: SentPayment<P>): Refusal | null;
  verify(env: SchemeEnv, proof: P, at: RouteMatch, sent: SentPayment<P>): Promise<Refusal | Verified<S>>;
  /** the payer (lower-case) whose signature the proof carries, else undefined */
  payer(env: SchemeEnv, proof: P): Promise<string | undefined>;
  /** the payer (lower-case) of a proof that could pay this route now (no facilitator, no chain), else null */
  validNow(env: SchemeEnv, proof: P, at: RouteMatch): Promise<string | null>;
  /**
   * Optional: work joined to the lock's own store transaction (after the lock and the payer's treasury), whose
   * result the claim reads as `locked.atLock`: a scheme charged by the store alone can charge here.
   */
  atLock?(env: SchemeEnv, locked: LockedPayment<S>): Promise<unknown>;
  /**
   * move the money once; `used`: what a metered call used (at most the route's price); `answered`: the status of
   * the answer already made (a paid read), which a lock-free proof's settle records as the payment's outcome
   */
  settle(env: SchemeEnv, locked: LockedPayment<S>, used: bigint | undefined, answered?: number): Promise<SchemeSettlement>;
  /** the settlement headers of a dead request's payment served now (settled already) */
  settledAgain(env: SchemeEnv, locked: LockedPayment<S>, transaction: string): Promise<Record<string, string>>;
}

/** a scheme of any proof (the registry's element) */
export type AnyScheme = PaymentScheme<any, any>;

/** the credential a claimed payment gives its request */
export const payerCredential = (payer: `0x${string}`, treasuryId: string): Credential => ({
  kind: "x402",
  scope: `payer:${payer.toLowerCase()}`,
  treasuryId,
  subject: payer,
});
