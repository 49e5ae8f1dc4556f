/** payment-identifier: a signer's x402 v2 identifier gets its first answer again, never a second charge. */
import { afterEach, describe, expect, it } from "vitest";
import type { IdempotencyStore } from "../../store/idempotency-store";
import type { PaymentGate } from "../../x402/payment-gate";
import { PAYMENT_SCHEMES } from "../../x402/schemes";
import { readPayment } from "../../x402/sent-payment";
import { PAYMENT_IDENTIFIER, toHeaderJson } from "../../x402/payment-match";
import { fakeClaim, memoryIdempotency, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";
import { paymentIdentifier } from "./payment-identifier";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

const PAYER = "0x1111111111111111111111111111111111111111";
const ID = "pid_0123456789abcdef";

/** a v2 proof (PAYMENT-SIGNATURE) carrying a payment-identifier */
const proof = (id: unknown) => ({
  "payment-signature": toHeaderJson({
    x402Version: 2,
    accepted: { scheme: "exact", network: "eip155:84532" },
    payload: { authorization: { from: PAYER, nonce: "0x01" } },
    ...(id === undefined ? {} : { extensions: { [PAYMENT_IDENTIFIER]: { info: { id } } } }),
  }),
});

function setup(log: CallLog, signer: string | null = PAYER) {
  const store = memoryIdempotency(log);
  const payments = {
    enabled: true,
    read: (header) => readPayment(header, PAYMENT_SCHEMES),
    verifiedPayer: async () => signer ?? undefined,
    authorize: async () => {
      log.push(["authorize"]);
      const claim = fakeClaim(log, true, "0xfresh");
      const credential = { kind: "x402" as const, scope: `payer:${claim.payer}`, treasuryId: claim.treasuryId, subject: claim.payer };
      return { kind: "claimed" as const, claim: claim as never, credential, treasuryId: claim.treasuryId };
    },
  } as Partial<PaymentGate> as PaymentGate;
  return { store, hooks: { payments, idempotency: store as unknown as IdempotencyStore } };
}

describe("payment-identifier", () => {
  it("takes part on the routes that take x402, with its three refusals", () => {
    expect([paymentIdentifier.takesPart(routeOf({ security: "bearer_or_x402" })), paymentIdentifier.takesPart(routeOf({ security: "bearer" }))]).toEqual([
      true,
      false,
    ]);
    expect(paymentIdentifier.errors(routeOf())).toEqual(["invalid_payment_identifier", "payment_identifier_reused", "payment_in_progress"]);
  });

  it("keeps the first answer under the signer, and gives it again to a fresh proof of the same payer, released unsettled", async () => {
    const log: CallLog = [];
    const { store, hooks } = setup(log);
    h = await serveStage(paymentIdentifier, routeOf({ security: "bearer_or_x402" }), hooks, (s) => (s.paying = true));
    const first = await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    expect(first.body).toEqual({ next: true, paying: true, payment: null });
    const again = await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    expect([again.status, again.text, again.headers.get("idempotent-replayed")]).toEqual([200, first.text, "true"]);
    expect(log).toEqual([
      ["claim", `x402-payment-identifier:${PAYER}`, ID],
      ["complete", `x402-payment-identifier:${PAYER}`, ID, 200],
      ["claim", `x402-payment-identifier:${PAYER}`, ID],
      ["authorize"],
      ["releasePayment", "0xfresh"],
    ]);
    expect(store.rows.size).toBe(1);
  });

  it("a stored answer is served only to the payer that paid: a fresh payment of another payer replays nothing", async () => {
    const log: CallLog = [];
    const other = "0x2222222222222222222222222222222222222222";
    // the scope read as `other`'s, while the payment that authorizes is PAYER's (fakeClaim)
    const { hooks } = setup(log, other);
    h = await serveStage(paymentIdentifier, routeOf({ security: "bearer_or_x402" }), hooks, (s) => (s.paying = true));
    await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    const again = await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    expect([again.status, again.body.error, again.headers.get("idempotent-replayed")]).toEqual([409, "payment_identifier_reused", null]);
    expect(log.slice(-2)).toEqual([["authorize"], ["releasePayment", "0xfresh"]]);
  });

  it("the same identifier for another request is 409 payment_identifier_reused; one still being served is 409 payment_in_progress", async () => {
    const log: CallLog = [];
    const { store, hooks } = setup(log);
    h = await serveStage(paymentIdentifier, routeOf({ security: "bearer_or_x402" }), hooks, (s) => (s.paying = true));
    await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    const reused = await h.call("POST", "/r", { body: { a: 2 }, headers: proof(ID) });
    expect([reused.status, reused.body.error]).toEqual([409, "payment_identifier_reused"]);
    store.rows.get(`x402-payment-identifier:${PAYER} ${ID}`)!.response = undefined; // the first is still running
    const busy = await h.call("POST", "/r", { body: { a: 1 }, headers: proof(ID) });
    expect([busy.status, busy.body.error, busy.headers.get("retry-after")]).toEqual([409, "payment_in_progress", "1"]);
  });

  it("an answer that is neither charged nor a success frees the identifier", async () => {
    const log: CallLog = [];
    const { store, hooks } = setup(log);
    const refusing = {
      run: (s: Parameters<typeof paymentIdentifier.run>[0]) => paymentIdentifier.run(s, async () => void s.res.status(402).send({ error: "invalid_payment" })),
    };
    h = await serveStage(refusing, routeOf({ security: "bearer_or_x402" }), hooks, (s) => (s.paying = true));
    expect((await h.call("POST", "/r", { body: {}, headers: proof(ID) })).status).toBe(402);
    expect(store.rows.size).toBe(0);
  });

  it("an invalid identifier is 400; a proof without one, or whose signature does not check out, goes the normal way", async () => {
    const log: CallLog = [];
    h = await serveStage(paymentIdentifier, routeOf({ security: "bearer_or_x402" }), setup(log).hooks, (s) => (s.paying = true));
    const invalid = await h.call("POST", "/r", { headers: proof("short") });
    expect([invalid.status, invalid.body.error]).toEqual([400, "invalid_payment_identifier"]);
    expect((await h.call("POST", "/r", { headers: proof(undefined) })).body.next).toBe(true);
    await h.close();
    h = await serveStage(paymentIdentifier, routeOf({ security: "bearer_or_x402" }), setup(log, null).hooks, (s) => (s.paying = true));
    expect((await h.call("POST", "/r", { headers: proof(ID) })).body.next).toBe(true);
    expect(log).toEqual([]);
  });
});
