/** The pipeline: the stages in order, those of a route chosen by its declaration, run one after the other. */
import { TreasuryError } from "@treasury/core/lib/errors";
import express from "express";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { errorHandler } from "../errors";
import type { RouteHooks } from "../route-spec";
import { routeOf, type CallLog } from "./harness.test-support";
import { REQUEST_STAGES, requestPipeline, stagesOf } from "./pipeline";

const names = (spec: Parameters<typeof stagesOf>[0]) => stagesOf(spec).map((s) => s.name);

describe("request stages", () => {
  it("are listed once, in order", () => {
    expect(REQUEST_STAGES.map((s) => s.name)).toEqual([
      "authenticate",
      "payment-challenge",
      "payment-identifier",
      "authorize-payment",
      "paid-write",
      "paid-read",
      "idempotency",
      "handle",
    ]);
  });

  it("a route goes through the stages its declaration calls for", () => {
    expect(names(routeOf({ method: "get" }))).toEqual(["handle"]);
    expect(names(routeOf({ security: "bearer" }))).toEqual(["authenticate", "handle"]);
    expect(names(routeOf({ security: "bearer", idempotencyKey: true }))).toEqual(["authenticate", "idempotency"]);
    expect(names(routeOf({ method: "get", security: "bearer_or_x402" }))).toEqual([
      "authenticate",
      "payment-challenge",
      "payment-identifier",
      "authorize-payment",
      "paid-read",
      "handle",
    ]);
    expect(names(routeOf({ security: "bearer_or_x402", idempotencyKey: true }))).toEqual([
      "authenticate",
      "payment-challenge",
      "payment-identifier",
      "authorize-payment",
      "paid-write",
      "idempotency",
    ]);
  });

  it("runs them in order: a bearer request is authenticated, then handled; a refusal stops it", async () => {
    const log: CallLog = [];
    const hooks: RouteHooks = {
      authenticate: (req) => {
        log.push(["authenticate"]);
        if (!req.header("authorization")) throw new TreasuryError("unauthorized", "no key");
      },
    };
    const serve = requestPipeline(routeOf({ security: "bearer", handler: () => (log.push(["handler"]), { status: 200, body: { ok: 1 } }) }), hooks);
    const app = express();
    app.post("/r", (req, res, next) => void serve(req, res).catch(next));
    app.use(errorHandler({ error: () => undefined }));
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/r`;
    try {
      const served = await fetch(url, { method: "POST", headers: { authorization: "Bearer k" } });
      const refused = await fetch(url, { method: "POST" });
      expect([served.status, await served.json(), refused.status]).toEqual([200, { ok: 1 }, 401]);
      expect(log).toEqual([["authenticate"], ["handler"], ["authenticate"]]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
