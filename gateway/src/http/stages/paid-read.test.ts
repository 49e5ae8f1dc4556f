/** paid-read: execute, then settle; a refusal or a failure is never charged. */
import { TreasuryError } from "@treasury/core/lib/errors";
import { afterEach, describe, expect, it } from "vitest";
import type { HandlerResult } from "../route-spec";
import { fakeClaim, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";
import { paidRead } from "./paid-read";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

async function serve(log: CallLog, answer: () => HandlerResult, settles = true) {
  const spec = routeOf({ method: "get", security: "bearer_or_x402", handler: () => (log.push(["handler"]), answer()) });
  return serveStage(paidRead, spec, {}, (s) => {
    s.paying = true;
    s.payment = fakeClaim(log, settles);
  });
}

describe("paid-read", () => {
  it("takes part on a priced route without an Idempotency-Key", () => {
    expect(paidRead.takesPart(routeOf({ security: "bearer_or_x402" }))).toBe(true);
    expect(paidRead.takesPart(routeOf({ security: "bearer_or_x402", idempotencyKey: true }))).toBe(false);
    expect(paidRead.errors(routeOf())).toEqual(["payment_settlement_unknown"]);
  });

  it("runs the handler, settles, records the outcome, then answers with the handler's headers", async () => {
    const log: CallLog = [];
    h = await serve(log, () => ({ status: 200, body: { n: 1 }, headers: { "X-Own": "yes" } }));
    const r = await h.call("GET", "/r");
    expect([r.status, r.body, r.headers.get("x-own")]).toEqual([200, { n: 1 }, "yes"]);
    expect(log).toEqual([["handler"], ["settle", "0xaa"], ["outcome", "0xaa", 200]]);
  });

  it("a handler's refusal is answered and its proof released, never settled", async () => {
    const log: CallLog = [];
    h = await serve(log, () => ({ status: 404, body: { error: "not_found" } }));
    expect((await h.call("GET", "/r")).status).toBe(404);
    expect(log).toEqual([["handler"], ["releasePayment", "0xaa"]]);
  });

  it("a handler that throws releases the proof", async () => {
    const log: CallLog = [];
    h = await serve(log, () => {
      throw new TreasuryError("chain_unavailable", "no answer");
    });
    expect((await h.call("GET", "/r")).status).toBe(503);
    expect(log).toEqual([["handler"], ["releasePayment", "0xaa"]]);
  });

  it("a failed settlement (its 402 written by the claim) sends nothing more", async () => {
    const log: CallLog = [];
    h = await serve(log, () => ({ status: 200, body: {} }), false);
    expect((await h.call("GET", "/r")).status).toBe(204);
    expect(log).toEqual([["handler"], ["settle", "0xaa"]]);
  });

  it("a request without a payment goes on", async () => {
    h = await serveStage(paidRead, routeOf({ security: "bearer_or_x402" }));
    expect((await h.call("POST", "/r")).body.next).toBe(true);
  });
});
