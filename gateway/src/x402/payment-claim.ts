/**
 * A verified, locked payment of one request (authorize.ts makes it), the same for every scheme: settled once by
 * its scheme, or released. The lock is a lease the request renews while it runs. A settlement that failed
 * undoes the lock and the treasury created for the request (a 402); an unanswered one keeps the lock, pending,
 * for the retry to settle again; a payment a dead request settled and never served is served free. Released
 * or lapsed: a lock taken over from a dead request (maybe settled before it died) lapses, so the next retry
 * takes it over at once; any other is freed with its new treasury.
 */
import type { AnyScheme, LockedPayment, Refusal, SchemeEnv } from "./schemes/scheme";
import { settlementUnknown } from "./settlement";

/** how settling a claim ended: settled (the answer's settlement headers), or refused (a 402 to write; the payment's credential is gone) */
export type SettleOutcome = { kind: "settled"; headers: Record<string, string> } | { kind: "refused"; refusal: Refusal };

/** a verified, locked payment of one request: settle it once, or release it */
export interface PaymentClaim {
  payer: `0x${string}`;
  nonce: string;
  treasuryId: string;
  /** the scheme that pays, and what its lock gave (its atLock's result) */
  locked: LockedPayment;
  /**
   * move the money once. `used`: what a metered call used, charged by an `upto` payment (at most its signed
   * maximum); any other scheme charges its price. `answered`: the status of the answer already made (a paid
   * read): a lock-free payment records it with the charge, in one transaction, and `outcome` writes nothing more.
   * Throws payment_settlement_unknown when the facilitator did not answer.
   */
  settle(used?: bigint, answered?: number): Promise<SettleOutcome>;
  /** the request will not be charged: free the proof (and a treasury created for it) */
  release(): Promise<void>;
  outcome(status: number): Promise<void>;
  /** the request is alive: extend the payment's lease */
  renew(): Promise<unknown>;
}

export function paymentClaim(env: SchemeEnv, scheme: AnyScheme, locked: LockedPayment): PaymentClaim {
  const { ctx } = env;
  const { payer, nonce, treasuryId, created, holder, takenOver, alreadySettled } = locked;
  const payments = ctx.stores.payments;

  let done = false;
  /** a lock-free payment's row exists once it is charged (until then nothing of it is in the store) */
  let recorded = !locked.lockFree;
  /** its outcome was written with its charge */
  let answeredWithCharge = false;
  const release = async () => {
    if (done) return;
    done = true;
    // lock-free and not charged: nothing of the payment was written, only a treasury created for it, if any
    if (!recorded) return created ? void (await ctx.stores.treasuries.removeUnused(treasuryId)) : undefined;
    // settled, or taken over from a dead request (maybe settled before it died): the row stays for the next retry
    if (alreadySettled || takenOver) return payments.lapse(payer, nonce, holder, ctx.clock.now());
    await ctx.tx.transaction(async () => {
      await payments.release(payer, nonce, holder);
      if (created) await ctx.stores.treasuries.removeUnused(treasuryId);
    });
  };
  return {
    payer,
    nonce,
    treasuryId,
    locked,
    release,
    renew: async () => (recorded ? await payments.renew(payer, nonce, holder, ctx.clock.now()) : true),
    outcome: async (status) => (answeredWithCharge ? undefined : await payments.outcome(payer, nonce, status)),
    settle: async (used, answered) => {
      if (done) throw new Error("payment already settled or released");
      if (alreadySettled) {
        done = true;
        return { kind: "settled", headers: await scheme.settledAgain(env, locked, alreadySettled.transaction) };
      }
      const settled = await scheme.settle(env, locked, used, locked.lockFree ? answered : undefined);
      if (settled.kind === "unknown") {
        // no answer: the transfer may be on its way. Not a failure: the lock is kept (its lease lapsed, so the retry
        // takes it over at once) with what to settle again, and the retry with the same proof is served once
        done = true;
        await payments.pending(payer, nonce, holder, settled.settlement, ctx.clock.now());
        throw settlementUnknown(payer);
      }
      if (settled.kind === "failed") {
        await release();
        return { kind: "refused", refusal: settled.refusal };
      }
      done = true;
      if (locked.lockFree) [recorded, answeredWithCharge] = [true, answered !== undefined];
      if (settled.kind === "spent") {
        await payments.outcome(payer, nonce, 402);
        return { kind: "refused", refusal: settled.refusal };
      }
      env.knownPayers.add(payer);
      return { kind: "settled", headers: settled.headers };
    },
  };
}
