/** authenticate: a bearer header decides; else the wallet's signature, else an x402 payer, else the key is asked for. */
import { TreasuryError } from "@treasury/core/lib/errors";
import { afterEach, describe, expect, it } from "vitest";
import { SIWX_HEADER } from "../../x402/sign-in-with-x";
import type { RouteHooks } from "../route-spec";
import { authenticate } from "./authenticate";
import { routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

function hooksFor(log: CallLog, over: Partial<RouteHooks> = {}): RouteHooks {
  return {
    authenticate: (req, res) => {
      log.push(["bearer", req.header("authorization")]);
      if (req.header("authorization") !== "Bearer good") throw new TreasuryError("unauthorized", "missing credential");
      res.locals.credential = { scope: "key:1" };
    },
    walletSignature: {
      authenticate: async () => void log.push(["siwx"]),
      challenge: () => ({}),
      unauthorized: () => new TreasuryError("unauthorized", "sign in with the wallet"),
    },
    payments: { enabled: true } as RouteHooks["payments"],
    ...over,
  };
}

describe("authenticate", () => {
  it("takes part on the routes that take a credential, and names the bearer refusals", () => {
    expect(["none", "admin", undefined].map((security) => authenticate.takesPart(routeOf({ security: security as never })))).toEqual([false, false, false]);
    expect(["bearer", "bearer_or_x402"].map((security) => authenticate.takesPart(routeOf({ security: security as never })))).toEqual([true, true]);
    expect(authenticate.errors(routeOf())).toEqual(["unauthorized", "owner_removed", "key_not_bound", "chain_unavailable"]);
  });

  it("a bearer route: the key is checked, then the request goes on; a bad key is 401", async () => {
    const log: CallLog = [];
    h = await serveStage(authenticate, routeOf({ security: "bearer" }), hooksFor(log));
    expect((await h.call("POST", "/r", { headers: { authorization: "Bearer good" } })).body).toEqual({ next: true, paying: false, payment: null });
    const refused = await h.call("POST", "/r", { headers: { [SIWX_HEADER]: "x" } });
    expect([refused.status, refused.body.error]).toEqual([401, "unauthorized"]);
    expect(log).toEqual([
      ["bearer", "Bearer good"],
      ["bearer", undefined],
    ]);
  });

  it("bearer or x402 without a bearer header while x402 is on: a payer, for the payment stages", async () => {
    const log: CallLog = [];
    h = await serveStage(authenticate, routeOf({ security: "bearer_or_x402" }), hooksFor(log));
    expect((await h.call("POST", "/r")).body).toEqual({ next: true, paying: true, payment: null });
    // a bearer header decides, even beside a payment
    expect((await h.call("POST", "/r", { headers: { authorization: "Bearer good", "x-payment": "proof" } })).body.paying).toBe(false);
    expect(log).toEqual([["bearer", "Bearer good"]]);
  });

  it("x402 off: the key is asked for", async () => {
    const log: CallLog = [];
    h = await serveStage(authenticate, routeOf({ security: "bearer_or_x402" }), hooksFor(log, { payments: { enabled: false } as RouteHooks["payments"] }));
    expect((await h.call("POST", "/r")).status).toBe(401);
    expect(log).toEqual([["bearer", undefined]]);
  });

  it("a siwx route: the wallet's signature without a bearer header; without either and x402 off, the wallet's challenge", async () => {
    const log: CallLog = [];
    h = await serveStage(
      authenticate,
      routeOf({ security: "bearer_or_x402", siwx: true }),
      hooksFor(log, { payments: { enabled: false } as RouteHooks["payments"] }),
    );
    expect((await h.call("POST", "/r", { headers: { [SIWX_HEADER]: "signed" } })).body).toEqual({ next: true, paying: false, payment: null });
    const refused = await h.call("POST", "/r");
    expect([refused.status, refused.body.message]).toEqual([401, "sign in with the wallet"]);
    expect(log).toEqual([["siwx"]]);
  });

  it("a route that takes a credential needs an authenticator", async () => {
    h = await serveStage(authenticate, routeOf({ security: "bearer", path: "/r" }), {});
    expect((await h.call("POST", "/r")).status).toBe(500);
    expect(String(h.thrown[0])).toContain("/r needs an authenticator");
  });
});
