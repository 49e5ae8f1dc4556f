/**
 * Settling a payment with the facilitator, judged: settled (with its transaction), failed (the facilitator
 * answered that it did not and will not happen: nothing was charged), or unknown (no answer, a timeout, a
 * facilitator error: the transfer may have been sent, so nothing may be undone). An unknown settlement is
 * kept pending and settled again later, at most once (the facilitator settles an authorization at most
 * once, and EIP-3009's nonce makes a second transfer impossible).
 */
import { TreasuryError } from "@treasury/core/lib/errors";
import { SettleError, settleResponseHeader, type PaymentPayload, type PaymentRequirements, type SettleResponse } from "x402/types";
import type { FacilitatorClient } from "./facilitator-client";
import type { PaymentGateContext } from "./gate-context";
import type { KnownPayers } from "./known-payers";
import { PAYMENT_HEADERS, toHeaderJson, X402_NETWORK, X402_NETWORK_V2, type X402Version } from "./payment-match";
import type { LockedPayment, SchemeEnv, SchemeSettlement } from "./schemes/scheme";

/** a settlement whose outcome is not known: the retry with the same proof (or the same Idempotency-Key) is served once, charged at most once */
export const settlementUnknown = (payer: string) =>
  new TreasuryError(
    "payment_settlement_unknown",
    "the facilitator did not answer the settlement of this payment: it may still be mined. Retry with the same proof (or the same Idempotency-Key): the request is served once and the payment is charged at most once",
    { payer, retry_after_seconds: 2 },
    { "Retry-After": "2" },
  );

/** the code of a facilitator's reason (`invalid_transaction_state: <the node's words>` -> `invalid_transaction_state`): no parser or node text reaches the client */
export const reasonCode = (reason: string | undefined): string | undefined => reason?.match(/^[a-z0-9_]+/)?.[0];

/** `amount`: what was settled, when the facilitator says (an `upto` settlement's may be less than the maximum) */
export type Settlement = { kind: "settled"; transaction: string; amount?: bigint } | { kind: "failed"; reason: string } | { kind: "unknown" };

/**
 * The facilitator's reason for a transaction sent whose receipt it could not wait for (@x402/evm's
 * `settlement_pending`): the transaction may be mined, so the outcome is unknown, never failed.
 */
const SETTLEMENT_PENDING = "settlement_pending";

/** a refusal's outcome: failed with its reason code, or unknown when the facilitator says the transaction is pending */
const refusedOutcome = (reason: string | undefined): Settlement => {
  const code = reasonCode(reason);
  return code === SETTLEMENT_PENDING ? { kind: "unknown" } : { kind: "failed", reason: code ?? "settlement_refused" };
};

/** one settlement call, judged */
export async function settleOnce(facilitator: FacilitatorClient, payment: PaymentPayload, requirements: PaymentRequirements): Promise<Settlement> {
  try {
    const settled = await facilitator.settle(payment, requirements);
    const amount = (settled as { amount?: unknown }).amount;
    return settled.success
      ? { kind: "settled", transaction: settled.transaction, ...(typeof amount === "string" && /^\d+$/.test(amount) ? { amount: BigInt(amount) } : {}) }
      : refusedOutcome(settled.errorReason);
  } catch (err) {
    if (err instanceof SettleError && err.statusCode < 500) return refusedOutcome(err.errorReason);
    return { kind: "unknown" };
  }
}

/**
 * A payment whose settlement's outcome was unknown (pending), settled now: `settled` (also when it was not
 * pending), `failed` (it cannot be collected; the record says so), or `unknown` again.
 */
export async function settlePending(
  ctx: Pick<PaymentGateContext, "clock" | "stores">,
  facilitator: FacilitatorClient,
  knownPayers: KnownPayers,
  payment: { payer: string; nonce: string },
): Promise<"settled" | "failed" | "unknown"> {
  const pending = await ctx.stores.payments.pendingSettlement(payment.payer, payment.nonce);
  if (!pending) return "settled";
  const { payment: payload, requirements } = JSON.parse(pending.settlement) as { payment: PaymentPayload; requirements: PaymentRequirements };
  const outcome = await settleOnce(facilitator, payload, requirements);
  if (outcome.kind === "unknown") return "unknown";
  if (outcome.kind === "failed") {
    await ctx.stores.payments.settlementFailed(payment.payer, payment.nonce);
    return "failed";
  }
  await ctx.stores.payments.settled(payment.payer, payment.nonce, outcome.transaction, pending.treasuryId ?? "", ctx.clock.now().toISOString(), outcome.amount);
  knownPayers.add(payment.payer);
  return "settled";
}

/** what a facilitator scheme (`exact`, `upto`) settles: the proof and the requirements in the version it was made in */
export interface FacilitatorSettling {
  version: X402Version;
  payment: PaymentPayload;
  requirements: PaymentRequirements;
}

/** the settlement response header of a facilitator scheme's payment, in the proof's version */
export const settlementHeaders = (
  version: X402Version,
  s: { success: boolean; transaction: string; payer?: string; amount?: string },
): Record<string, string> => ({
  [PAYMENT_HEADERS[version].response]:
    version === 2 ? toHeaderJson({ ...s, network: X402_NETWORK_V2 }) : settleResponseHeader({ ...s, network: X402_NETWORK } as SettleResponse),
});

/**
 * A facilitator scheme's payment settled once: `used` (a metered call's use) settles that amount instead of the
 * price (the facilitator refuses more than the signed maximum); a settlement below the use is spent, not served.
 */
export async function settleByFacilitator(
  env: Pick<SchemeEnv, "ctx" | "facilitator">,
  locked: LockedPayment<FacilitatorSettling>,
  used: bigint | undefined,
): Promise<SchemeSettlement> {
  const { payer, nonce, treasuryId, settling } = locked;
  const payments = env.ctx.stores.payments;
  const metered = used !== undefined;
  const requirements = metered ? ({ ...settling.requirements, amount: used.toString() } as PaymentRequirements) : settling.requirements;
  // the facilitator settles an authorization at most once: a takeover's second call returns the first settlement
  const outcome = await settleOnce(env.facilitator, settling.payment, requirements);
  if (outcome.kind === "unknown") return { kind: "unknown", settlement: JSON.stringify({ payment: settling.payment, requirements }) };
  if (outcome.kind === "failed") return { kind: "failed", refusal: { error: "settlement_failed", extra: { reason: outcome.reason, payer } } };
  await payments.settled(payer, nonce, outcome.transaction, treasuryId, env.ctx.clock.now().toISOString(), outcome.amount);
  if (metered && outcome.amount !== undefined && outcome.amount < used) {
    // the authorization was settled for less than this call used (by someone else, before it): the call is not served
    const extra = { reason: "settled_below_use", payer, settled_amount: outcome.amount.toString() };
    return { kind: "spent", refusal: { error: "settlement_failed", extra } };
  }
  const amount = metered ? { amount: outcome.amount?.toString() ?? used.toString() } : {};
  return { kind: "settled", headers: settlementHeaders(settling.version, { success: true, transaction: outcome.transaction, payer, ...amount }) };
}
