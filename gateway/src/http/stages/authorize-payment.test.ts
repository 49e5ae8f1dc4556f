/** authorize-payment: a payer's proof verified and locked before anything else; a refused one goes no further. */
import { afterEach, describe, expect, it } from "vitest";
import type { GateOutcome, PaymentGate } from "../../x402/payment-gate";
import { PAYMENT_SCHEMES } from "../../x402/schemes";
import { readPayment } from "../../x402/sent-payment";
import { authorizePayment } from "./authorize-payment";
import { fakeClaim, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

function gate(log: CallLog, claim: ReturnType<typeof fakeClaim> | null): PaymentGate {
  return {
    enabled: true,
    read: (header) => readPayment(header, PAYMENT_SCHEMES),
    authorize: async (_sent, route): Promise<GateOutcome> => {
      log.push(["authorize", route]);
      if (!claim) return { kind: "refused", status: 402, headers: { "WWW-Authenticate": "X402" }, body: { error: "invalid_payment" } };
      const credential = { kind: "x402" as const, scope: `payer:${claim.payer}`, treasuryId: claim.treasuryId, subject: claim.payer };
      return { kind: "claimed", claim: claim as never, credential, treasuryId: claim.treasuryId };
    },
  } as Partial<PaymentGate> as PaymentGate;
}

describe("authorize-payment", () => {
  it("takes part on the routes that take x402; a facilitator out of reach or a proof in use are its refusals", () => {
    expect([authorizePayment.takesPart(routeOf({ security: "bearer_or_x402" })), authorizePayment.takesPart(routeOf({ security: "bearer" }))]).toEqual([
      true,
      false,
    ]);
    expect(authorizePayment.errors(routeOf())).toEqual(["payment_facilitator_unavailable", "payment_in_progress"]);
  });

  it("an accepted proof is the request's payment, for the next stage", async () => {
    const log: CallLog = [];
    h = await serveStage(
      authorizePayment,
      routeOf({ security: "bearer_or_x402", path: "/r" }),
      { payments: gate(log, fakeClaim(log, true, "0xbb")) },
      (s) => (s.paying = true),
    );
    expect((await h.call("POST", "/r")).body).toEqual({ next: true, paying: true, payment: "0xbb" });
    expect(log).toEqual([["authorize", { method: "POST", path: "/r" }]]);
  });

  it("a refused proof is the gate's 402, written here with the request's id, and goes no further", async () => {
    const log: CallLog = [];
    h = await serveStage(authorizePayment, routeOf({ security: "bearer_or_x402" }), { payments: gate(log, null) }, (s) => (s.paying = true));
    const r = await h.call("POST", "/r");
    expect([r.status, r.body, r.headers.get("www-authenticate")]).toEqual([402, { error: "invalid_payment", request_id: "req_test" }, "X402"]);
  });

  it("a claimed proof gives the request its payer's credential and X-Treasury-Id", async () => {
    const log: CallLog = [];
    h = await serveStage(
      authorizePayment,
      routeOf({ security: "bearer_or_x402" }),
      { payments: gate(log, fakeClaim(log, true, "0xcc")) },
      (s) => (s.paying = true),
    );
    const r = await h.call("POST", "/r");
    expect([r.body.payment, r.headers.get("x-treasury-id"), h.states[0]!.res.locals.credential]).toEqual([
      "0xcc",
      "trs_paid",
      {
        kind: "x402",
        scope: "payer:0x1111111111111111111111111111111111111111",
        treasuryId: "trs_paid",
        subject: "0x1111111111111111111111111111111111111111",
      },
    ]);
  });

  it("a request that is not a payer's goes on without a payment", async () => {
    const log: CallLog = [];
    h = await serveStage(authorizePayment, routeOf({ security: "bearer_or_x402" }), { payments: gate(log, null) });
    expect((await h.call("POST", "/r")).body).toEqual({ next: true, paying: false, payment: null });
    expect(log).toEqual([]);
  });
});
