/** authorize-payment: a payer's proof verified and locked before anything else; a refused one goes no further. */
import { afterEach, describe, expect, it } from "vitest";
import type { PaymentClaim, PaymentGate } from "../../x402/payment-gate";
import { authorizePayment } from "./authorize-payment";
import { fakeClaim, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

function gate(log: CallLog, claim: PaymentClaim | null): PaymentGate {
  return {
    enabled: true,
    authorize: async (_req, res, route) => {
      log.push(["authorize", route]);
      if (!claim) res.status(402).json({ error: "invalid_payment" });
      return claim;
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

  it("a refused proof is answered by the gate (402) and goes no further", async () => {
    const log: CallLog = [];
    h = await serveStage(authorizePayment, routeOf({ security: "bearer_or_x402" }), { payments: gate(log, null) }, (s) => (s.paying = true));
    const r = await h.call("POST", "/r");
    expect([r.status, r.body]).toEqual([402, { error: "invalid_payment" }]);
  });

  it("a request that is not a payer's goes on without a payment", async () => {
    const log: CallLog = [];
    h = await serveStage(authorizePayment, routeOf({ security: "bearer_or_x402" }), { payments: gate(log, null) });
    expect((await h.call("POST", "/r")).body).toEqual({ next: true, paying: false, payment: null });
    expect(log).toEqual([]);
  });
});
