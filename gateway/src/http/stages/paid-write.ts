/**
 * x402 on a state-changing route, in the order that charges exactly once:
 *
 *   claim       the Idempotency-Key (a replay gets the stored answer and its proof is released unsettled)
 *   reserve     every check and the treasury's conflict slot (nothing is charged yet)
 *   settle      the key's prepaid credit if an earlier settled request of it did not execute, else this proof
 *   execute     the handler
 *   record      the outcome under the key; a non-2xx after settlement leaves a prepaid credit on the key
 *
 * A request that is replayed, refused or conflicted before settlement is never settled (its proof is
 * released); one that was settled but did not execute leaves a prepaid credit on its key, so its retry is
 * not charged. The answer that carries a settlement carries its signed receipt (x402/receipts/), bound to
 * this request and the answer's bytes; a retry paid by the key's credit carries neither. A settlement whose outcome is unknown keeps that payment as the key's credit, so a retry
 * with a fresh proof settles the first payment, never both.
 */
import { TreasuryError } from "@treasury/core/lib/errors";
import { checkIdempotencyKey, requestFingerprint, whileLeased } from "../../services/idempotency";
import { newHolder } from "../../store/lease";
import { settlementUnknown } from "../../x402/settlement";
import { outcomeOf, sendOutcome } from "./respond";
import { holderOf, paidRoute, takesPayment, type RequestStage } from "./stage";
import { handlerContext } from "./validate";

/** a payment, by its payer and the EIP-3009 nonce of its authorization */
type Payment = { payer: string; nonce: string };

const samePayment = (a: Payment, b: Payment) => a.payer.toLowerCase() === b.payer.toLowerCase() && a.nonce.toLowerCase() === b.nonce.toLowerCase();

export const paidWrite: RequestStage = {
  name: "paid-write",
  takesPart: (spec) => takesPayment(spec) && spec.idempotencyKey === true,
  errors: () => ["invalid_request", "idempotency_key_reused", "idempotency_in_progress", "payment_settlement_unknown"],
  async run(state, next) {
    const { req, res, spec, hooks, now, payment: claim } = state;
    if (!claim) return next();
    const store = hooks.idempotency!;
    let keyHolder: string | undefined;
    let charged: Payment | undefined;
    let releaseSlot: (() => Promise<void>) | undefined;
    let creditKept = false;
    const scope = (res.locals.credential as { scope: string }).scope;
    const key = req.header("idempotency-key");
    const fingerprint = requestFingerprint(`${req.method} ${req.path}`, req.body);
    try {
      // claim
      const checkedKey = checkIdempotencyKey(key);
      const taken = await store.claim(scope, checkedKey, fingerprint, now(), newHolder("req"));
      if (taken.kind === "replay") {
        await claim.release();
        return sendOutcome(res, taken.response, true);
      }
      if (taken.kind === "mismatch")
        throw new TreasuryError("idempotency_key_reused", "this Idempotency-Key was already used with a different request; use a fresh key");
      if (taken.kind === "in_progress")
        throw new TreasuryError(
          "idempotency_in_progress",
          "a request with this Idempotency-Key is still being processed; retry shortly (nothing was charged)",
          {},
          { "Retry-After": "1" },
        );
      const holder = (keyHolder = taken.holder);

      await whileLeased(
        () => Promise.all([store.renew(scope, checkedKey, holder, now()), claim.renew(), hooks.renewReservations?.(holderOf(res))]),
        async () => {
          // reserve
          const c = handlerContext(spec, req, res);
          releaseSlot = spec.reserve ? await spec.reserve(c, holderOf(res)) : undefined;

          // settle
          const prepaid = await store.takePrepaid(scope, checkedKey, fingerprint);
          // an earlier proof of this key whose settlement's outcome was unknown is settled now (at most once)
          const collected = prepaid ? await hooks.payments!.settlePending(prepaid) : undefined;
          if (collected === "unknown") {
            await store.addPrepaid(scope, checkedKey, fingerprint, prepaid!, now());
            creditKept = true; // the key's credit stays the earlier payment; this proof is released unsettled
            throw settlementUnknown(prepaid!.payer);
          }
          if (prepaid && collected === "settled") {
            await claim.release(); // this request was paid for by an earlier proof that did not execute
            charged = prepaid;
          } else {
            if (!(await claim.settle())) {
              keyHolder = undefined;
              await store.release(scope, checkedKey, holder);
              return;
            }
            charged = { payer: claim.payer, nonce: claim.nonce };
          }

          // execute
          const outcome = await outcomeOf(res, async () => spec.handler(c));

          // record
          if (outcome.status >= 400) {
            // paid, not executed: the retry of this key is free
            await store.addPrepaid(scope, checkedKey, fingerprint, charged, now());
            await store.release(scope, checkedKey, holder);
          } else {
            await store.complete(scope, checkedKey, outcome, holder);
          }
          keyHolder = undefined;
          // the payment that paid for it is spent: this proof's, or the key's credit's
          if (samePayment(charged, claim)) await claim.outcome(outcome.status);
          else await hooks.payments!.spent(charged, outcome.status);
          // the settlement this answer carries (none when a key's credit paid) gets its receipt, bound to these bytes
          await hooks.receipts?.signHttpAnswer(req, res, paidRoute(spec), charged.payer, outcome.body);
          sendOutcome(res, outcome, false);
        },
      );
    } catch (err) {
      if (charged) {
        await store.addPrepaid(scope, key!, fingerprint, charged, now());
        await claim.outcome(500); // its value now lives in the prepaid credit
      } else if (err instanceof TreasuryError && err.code === "payment_settlement_unknown" && keyHolder && !creditKept) {
        // maybe charged: the key keeps the payment as its credit, so a retry with a fresh proof settles this one, not both
        await store.addPrepaid(scope, key!, fingerprint, { payer: claim.payer, nonce: claim.nonce }, now());
      } else await claim.release();
      if (keyHolder) await store.release(scope, key!, keyHolder);
      throw err;
    } finally {
      await releaseSlot?.();
    }
  },
};
