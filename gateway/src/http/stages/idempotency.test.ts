/** idempotency: an unpaid keyed call runs once (reserved) and is replayed; a storeOnly one in one transaction. */
import { TreasuryError } from "@treasury/core/lib/errors";
import { afterEach, describe, expect, it } from "vitest";
import type { IdempotencyStore } from "../../store/idempotency-store";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import { memoryIdempotency, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";
import { idempotency } from "./idempotency";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

const KEY = { "idempotency-key": "key-0001" };

function setup(log: CallLog, over: Partial<AnyRouteSpec> = {}, transactionFails?: unknown) {
  const store = memoryIdempotency(log);
  const hooks: RouteHooks = {
    idempotency: store as unknown as IdempotencyStore,
    transaction: async (fn) => {
      log.push(["transaction"]);
      if (transactionFails) throw transactionFails;
      return fn();
    },
  };
  const spec = routeOf({
    idempotencyKey: true,
    reserve: async () => (log.push(["reserve"]), async () => void log.push(["releaseSlot"])),
    handler: () => (log.push(["handler"]), { status: 201, body: { made: 1 }, headers: { "X-Own": "1" } }),
    ...over,
  });
  return { store, hooks, spec };
}

describe("idempotency", () => {
  it("takes part on a keyed route; a storeOnly one may also be a conflict", () => {
    expect([idempotency.takesPart(routeOf({ idempotencyKey: true })), idempotency.takesPart(routeOf())]).toEqual([true, false]);
    expect(idempotency.errors(routeOf())).toEqual(["invalid_request", "idempotency_key_reused", "idempotency_in_progress"]);
    expect(idempotency.errors(routeOf({ storeOnly: () => true }))).toContain("conflicting_operation");
  });

  it("runs the call once, reserved, and answers the same key with the stored answer", async () => {
    const log: CallLog = [];
    const { hooks, spec } = setup(log);
    h = await serveStage(idempotency, spec, hooks, (s) => (s.res.locals.credential = { scope: "key:1" }));
    const first = await h.call("POST", "/r", { body: { a: 1 }, headers: KEY });
    const again = await h.call("POST", "/r", { body: { a: 1 }, headers: KEY });
    expect([first.status, first.headers.get("x-own"), first.headers.get("idempotent-replayed")]).toEqual([201, "1", "false"]);
    expect([again.status, again.text, again.headers.get("idempotent-replayed")]).toEqual([201, first.text, "true"]);
    const other = await h.call("POST", "/r", { body: { a: 2 }, headers: KEY });
    expect([other.status, other.body.error]).toEqual([422, "idempotency_key_reused"]);
    expect(log).toEqual([
      ["claim", "key:1", "key-0001"],
      ["reserve"],
      ["handler"],
      ["releaseSlot"],
      ["complete", "key:1", "key-0001", 201],
      ["claim", "key:1", "key-0001"],
      ["claim", "key:1", "key-0001"],
    ]);
  });

  it("a key's scope: the credential's, else the route's own, else public; no key is 400", async () => {
    const log: CallLog = [];
    const { hooks, spec } = setup(log, { idempotencyScope: ({ req }) => `signer:${(req.body as { who: string }).who}` });
    h = await serveStage(idempotency, spec, hooks);
    await h.call("POST", "/r", { body: { who: "w" }, headers: KEY });
    await h.close();
    h = await serveStage(idempotency, setup(log).spec, hooks);
    await h.call("POST", "/r", { body: {}, headers: KEY });
    const none = await h.call("POST", "/r", { body: {} });
    expect([none.status, none.body.error]).toEqual([400, "invalid_request"]);
    expect(log.filter(([what]) => what === "claim")).toEqual([
      ["claim", "signer:w", "key-0001"],
      ["claim", "public", "key-0001"],
    ]);
  });

  it("a storeOnly request: claim, handler and answer in one transaction, without reserve", async () => {
    const log: CallLog = [];
    const { hooks, spec } = setup(log, { storeOnly: () => true });
    h = await serveStage(idempotency, spec, hooks);
    expect((await h.call("POST", "/r", { body: {}, headers: KEY })).status).toBe(201);
    expect(log).toEqual([["transaction"], ["claim", "public", "key-0001"], ["handler"], ["complete", "public", "key-0001", 201]]);
  });

  it("a storeOnly request the store kept colliding on is 409 conflicting_operation (nothing was done)", async () => {
    const log: CallLog = [];
    const { hooks, spec } = setup(log, { storeOnly: () => true }, Object.assign(new Error("could not serialize"), { code: "40001" }));
    h = await serveStage(idempotency, spec, hooks);
    const r = await h.call("POST", "/r", { body: {}, headers: KEY });
    expect([r.status, r.body.error, r.headers.get("retry-after")]).toEqual([409, "conflicting_operation", "1"]);
  });

  it("a request the route cannot call storeOnly (it refuses to say) takes the ordinary path", async () => {
    const log: CallLog = [];
    const { hooks, spec } = setup(log, {
      storeOnly: () => {
        throw new TreasuryError("treasury_not_found", "no");
      },
    });
    h = await serveStage(idempotency, spec, hooks);
    expect((await h.call("POST", "/r", { body: {}, headers: KEY })).status).toBe(201);
    expect(log).not.toContainEqual(["transaction"]);
  });
});
