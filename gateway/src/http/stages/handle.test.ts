/** handle: reserve, execute, release, answer (unless the handler answered itself). */
import { afterEach, describe, expect, it } from "vitest";
import { sendJson } from "../json-response";
import { handle } from "./handle";
import { routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

describe("handle", () => {
  it("is the last stage of a route without an Idempotency-Key, with no code of its own", () => {
    expect([handle.takesPart(routeOf()), handle.takesPart(routeOf({ idempotencyKey: true }))]).toEqual([true, false]);
    expect(handle.errors(routeOf())).toEqual([]);
  });

  it("answers the handler's result with its headers, the slot released first", async () => {
    const log: CallLog = [];
    const spec = routeOf({
      reserve: async () => (log.push(["reserve"]), async () => void log.push(["releaseSlot"])),
      handler: () => (log.push(["handler"]), { status: 201, body: { id: "x" }, headers: { "Cache-Control": "no-store" } }),
    });
    h = await serveStage(handle, spec);
    const r = await h.call("POST", "/r", { body: {} });
    expect([r.status, r.body, r.headers.get("cache-control"), r.headers.get("content-type")]).toEqual([
      201,
      { id: "x" },
      "no-store",
      "application/json; charset=utf-8",
    ]);
    expect(log).toEqual([["reserve"], ["handler"], ["releaseSlot"]]);
  });

  it("a handler that answered itself is not answered again", async () => {
    h = await serveStage(handle, routeOf({ handler: ({ res }) => (sendJson(res, 202, { own: true }), { status: 200, body: undefined }) }));
    const r = await h.call("POST", "/r", { body: {} });
    expect([r.status, r.body]).toEqual([202, { own: true }]);
  });

  it("a body still a promise (a missing await) fails loudly", async () => {
    h = await serveStage(handle, routeOf({ handler: () => ({ status: 200, body: Promise.resolve(1) }) }));
    expect((await h.call("POST", "/r", { body: {} })).status).toBe(500);
    expect(String(h.thrown[0])).toContain("a missing await");
  });
});
