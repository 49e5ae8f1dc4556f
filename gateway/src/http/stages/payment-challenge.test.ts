/** payment-challenge: a payer without a proof gets the route's 402 (with sign-in-with-x on a siwx route); a proof goes on. */
import { afterEach, describe, expect, it } from "vitest";
import type { PaymentGate } from "../../x402/payment-gate";
import { PAYMENT_SCHEMES } from "../../x402/schemes";
import { readPayment } from "../../x402/sent-payment";
import { SIWX_EXTENSION_KEY } from "../../x402/sign-in-with-x";
import type { RouteHooks } from "../route-spec";
import { routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";
import { paymentChallenge } from "./payment-challenge";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

function hooksFor(log: CallLog): RouteHooks {
  const payments = {
    enabled: true,
    read: (header) => readPayment(header, PAYMENT_SCHEMES),
    challenge: (route, extensions) => {
      log.push(["challenge", route, extensions]);
      return { status: 402, headers: { "PAYMENT-REQUIRED": "e30=" }, body: { x402Version: 1 }, paywall: (url) => `<html>pay for ${url}</html>` };
    },
  } as Partial<PaymentGate> as PaymentGate;
  return { payments, walletSignature: { authenticate: async () => undefined, challenge: () => ({ statement: "sign this" }) } };
}

describe("payment-challenge", () => {
  it("takes part on the routes that take x402, and answers no error code of its own (its 402 is x402's)", () => {
    expect(paymentChallenge.takesPart(routeOf({ security: "bearer_or_x402" }))).toBe(true);
    expect(paymentChallenge.takesPart(routeOf({ security: "bearer" }))).toBe(false);
    expect(paymentChallenge.errors(routeOf())).toEqual([]);
  });

  it("a payer without a proof: the 402 of the route (method and declared path)", async () => {
    const log: CallLog = [];
    h = await serveStage(paymentChallenge, routeOf({ security: "bearer_or_x402", method: "get", path: "/r" }), hooksFor(log), (s) => (s.paying = true));
    expect((await h.call("GET", "/r")).status).toBe(402);
    expect(log).toEqual([["challenge", { method: "GET", path: "/r" }, {}]]);
  });

  it("the gate's challenge is written here: its headers, its body with the request's id; a browser gets the paywall page", async () => {
    const log: CallLog = [];
    h = await serveStage(paymentChallenge, routeOf({ security: "bearer_or_x402", method: "get", path: "/r" }), hooksFor(log), (s) => (s.paying = true));
    const api = await h.call("GET", "/r?x=1");
    expect([api.status, api.body, api.headers.get("payment-required")]).toEqual([402, { x402Version: 1, request_id: "req_test" }, "e30="]);
    const browser = await h.call("GET", "/r?x=1", { headers: { accept: "text/html", "user-agent": "Mozilla/5.0" } });
    expect([browser.status, browser.text, browser.headers.get("payment-required")]).toEqual([402, "<html>pay for /r?x=1</html>", "e30="]);
  });

  it("on a siwx route the 402 also offers sign-in-with-x", async () => {
    const log: CallLog = [];
    h = await serveStage(paymentChallenge, routeOf({ security: "bearer_or_x402", siwx: true }), hooksFor(log), (s) => (s.paying = true));
    expect((await h.call("POST", "/r")).status).toBe(402);
    expect(log).toEqual([["challenge", { method: "POST", path: "/r" }, { [SIWX_EXTENSION_KEY]: { statement: "sign this" } }]]);
  });

  it("a proof of either version, or a request that is not a payer's, goes on", async () => {
    const log: CallLog = [];
    let paying = true;
    h = await serveStage(paymentChallenge, routeOf({ security: "bearer_or_x402" }), hooksFor(log), (s) => (s.paying = paying));
    expect((await h.call("POST", "/r", { headers: { "x-payment": "proof" } })).body.next).toBe(true);
    expect((await h.call("POST", "/r", { headers: { "payment-signature": "proof" } })).body.next).toBe(true);
    paying = false;
    expect((await h.call("POST", "/r")).body.next).toBe(true);
    expect(log).toEqual([]);
  });
});
