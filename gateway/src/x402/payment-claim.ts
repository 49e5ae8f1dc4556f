/**
 * A verified, locked payment of one request (authorize.ts makes it): settled once, or released. The lock
 * is a lease the request renews while it runs. Settling moves the money: a failure undoes the lock and
 * the treasury created for the request (402); an unanswered settlement keeps the lock, pending, for the
 * retry to settle again. A payment a dead request settled and never served is served free.
 */
import type { Response } from "express";
import { settleResponseHeader, type PaymentPayload, type PaymentRequirements, type SettleResponse } from "x402/types";
import type { FacilitatorClient } from "./facilitator-client";
import type { PaymentGateContext } from "./gate-context";
import type { KnownPayers } from "./known-payers";
import { PAYMENT_HEADERS, toHeaderJson as headerJson, X402_NETWORK, X402_NETWORK_V2, type X402Version } from "./payment-match";
import { settleOnce, settlementUnknown } from "./settlement";

/** a verified, locked payment of one request: settle it once, or release it */
export interface PaymentClaim {
  payer: `0x${string}`;
  nonce: string;
  treasuryId: string;
  /**
   * move the money; on failure the 402 is written, everything undone, and false returned. `used`: what a metered
   * call used, charged by an `upto` payment (at most its signed maximum); any other scheme charges its price.
   * `answered`: the status of the answer already made (a paid read), recorded as the payment's outcome with the
   * charge where the scheme can (a session voucher: one transaction); `outcome` then writes nothing more
   */
  settle(used?: bigint, answered?: number): Promise<boolean>;
  /** the request will not be charged: free the proof (and a treasury created for it) */
  release(): Promise<void>;
  outcome(status: number): Promise<void>;
  /** the request is alive: extend the payment's lease */
  renew(): Promise<unknown>;
}

/** what the lock of a verified proof gave: whose payment, on which treasury, under which holder */
export interface LockedPayment {
  payer: `0x${string}`;
  nonce: string;
  treasuryId: string;
  /** the treasury was created for this payment (removed again if it is released) */
  created: boolean;
  holder: string;
  /** taken over from a dead request (maybe settled before it died) */
  takenOver: boolean;
  /** a dead request's payment that was settled and never served: this request is its service, free */
  alreadySettled?: { transaction: string };
  /** the proof's version, and the proof and requirements the facilitator gets in it */
  version: X402Version;
  payment: PaymentPayload;
  requirements: PaymentRequirements;
}

export function paymentClaim(
  ctx: Pick<PaymentGateContext, "clock" | "tx" | "stores">,
  deps: { facilitator: FacilitatorClient; knownPayers: KnownPayers },
  locked: LockedPayment,
  answer: { res: Response; refuse(error: string, extra: Record<string, unknown>): void },
): PaymentClaim {
  const { payer, nonce, treasuryId, created, holder, takenOver, alreadySettled, version, payment, requirements } = locked;
  const { res } = answer;
  const payments = ctx.stores.payments;
  const settlementHeader = (s: { success: boolean; transaction: string; payer?: string; errorReason?: string }) =>
    version === 2 ? headerJson({ ...s, network: X402_NETWORK_V2 }) : settleResponseHeader({ ...s, network: X402_NETWORK } as SettleResponse);

  let done = false;
  const release = async () => {
    if (done) return;
    done = true;
    // settled, or taken over from a dead request (maybe settled before it died): the row stays for the next retry
    if (alreadySettled || takenOver) return payments.lapse(payer, nonce, holder, ctx.clock.now());
    await ctx.tx.transaction(async () => {
      await payments.release(payer, nonce, holder);
      if (created) await ctx.stores.treasuries.removeUnused(treasuryId);
    });
  };
  /** the credential this payment gave the request is gone with it */
  const forget = () => {
    res.locals.credential = undefined;
    res.removeHeader("X-Treasury-Id");
  };
  return {
    payer,
    nonce,
    treasuryId,
    release,
    renew: async () => await payments.renew(payer, nonce, holder, ctx.clock.now()),
    outcome: async (status) => await payments.outcome(payer, nonce, status),
    settle: async (used) => {
      if (done) throw new Error("payment already settled or released");
      // an `upto` payment settles what the call used (the facilitator refuses more than the signed maximum)
      const metered = (requirements.scheme as string) === "upto" && used !== undefined;
      const settling = metered ? ({ ...requirements, amount: used.toString() } as PaymentRequirements) : requirements;
      if (alreadySettled) {
        done = true;
        res.setHeader(PAYMENT_HEADERS[version].response, settlementHeader({ success: true, transaction: alreadySettled.transaction, payer }));
        return true;
      }
      // the facilitator settles an authorization at most once: a takeover's second call returns the first settlement
      const outcome = await settleOnce(deps.facilitator, payment, settling);
      if (outcome.kind === "unknown") {
        // no answer: the transfer may be on its way. Not a failure: the lock is kept (its lease lapsed, so the retry
        // takes it over at once) with what to settle again, and the retry with the same proof is served once
        done = true;
        await payments.pending(payer, nonce, holder, JSON.stringify({ payment, requirements: settling }), ctx.clock.now());
        forget();
        throw settlementUnknown(payer);
      }
      if (outcome.kind === "failed") {
        await release();
        forget();
        answer.refuse("settlement_failed", { reason: outcome.reason, payer });
        return false;
      }
      done = true;
      await payments.settled(payer, nonce, outcome.transaction, treasuryId, ctx.clock.now().toISOString(), outcome.amount);
      if (metered && outcome.amount !== undefined && outcome.amount < used) {
        // the authorization was settled for less than this call used (by someone else, before it): the call is not served
        await payments.outcome(payer, nonce, 402);
        forget();
        answer.refuse("settlement_failed", { reason: "settled_below_use", payer, settled_amount: outcome.amount.toString() });
        return false;
      }
      deps.knownPayers.add(payer);
      res.setHeader(
        PAYMENT_HEADERS[version].response,
        settlementHeader({
          success: true,
          transaction: outcome.transaction,
          payer,
          ...(metered ? { amount: outcome.amount?.toString() ?? used.toString() } : {}),
        }),
      );
      return true;
    },
  };
}
