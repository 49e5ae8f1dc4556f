/** paid-write: claim the key, reserve, settle (or use the key's credit), execute, record: charged exactly once. */
import { TreasuryError } from "@treasury/core/lib/errors";
import { afterEach, describe, expect, it } from "vitest";
import type { IdempotencyStore } from "../../store/idempotency-store";
import type { PaymentGate } from "../../x402/payment-gate";
import { settlementUnknown } from "../../x402/settlement";
import type { AnyRouteSpec } from "../route-spec";
import { fakeClaim, memoryIdempotency, routeOf, serveStage, type CallLog, type StageHarness } from "./harness.test-support";
import { paidWrite } from "./paid-write";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

const SCOPE = "payer:0x11";
const KEY = { "idempotency-key": "key-0001" };

function setup(log: CallLog, opts: { settles?: boolean | Error; pending?: "settled" | "failed" | "unknown"; refuse?: boolean } = {}) {
  const store = memoryIdempotency(log);
  const payments = {
    enabled: true,
    read: () => undefined,
    settlePending: async (p: { nonce: string }) => (log.push(["settlePending", p.nonce]), opts.pending ?? "settled"),
    spent: async (p: { nonce: string }, status: number) => void log.push(["spent", p.nonce, status]),
  } as Partial<PaymentGate> as PaymentGate;
  const spec: AnyRouteSpec = routeOf({
    security: "bearer_or_x402",
    idempotencyKey: true,
    reserve: async (_c, holder) => {
      log.push(["reserve", holder.startsWith("slot_")]);
      return async () => void log.push(["releaseSlot"]);
    },
    handler: () => {
      log.push(["handler"]);
      if (opts.refuse) throw new TreasuryError("conflicting_operation", "busy");
      return { status: 202, body: { done: true } };
    },
  });
  const claim = fakeClaim(log, opts.settles ?? true);
  return {
    store,
    spec,
    hooks: { payments, idempotency: store as unknown as IdempotencyStore },
    prepare: (s: Parameters<typeof paidWrite.run>[0]) => {
      s.paying = true;
      s.payment = claim;
      s.res.locals.credential = { scope: SCOPE };
    },
  };
}

describe("paid-write", () => {
  it("takes part on a priced route with an Idempotency-Key", () => {
    expect(paidWrite.takesPart(routeOf({ security: "bearer_or_x402", idempotencyKey: true }))).toBe(true);
    expect(paidWrite.takesPart(routeOf({ security: "bearer_or_x402" }))).toBe(false);
    expect(paidWrite.takesPart(routeOf({ security: "bearer", idempotencyKey: true }))).toBe(false);
    expect(paidWrite.errors(routeOf())).toEqual(["invalid_request", "idempotency_key_reused", "idempotency_in_progress", "payment_settlement_unknown"]);
  });

  it("claims the key, reserves, settles, executes, records; the replay is the stored answer and its proof is released", async () => {
    const log: CallLog = [];
    const s = setup(log);
    h = await serveStage(paidWrite, s.spec, s.hooks, s.prepare);
    const first = await h.call("POST", "/r", { body: { a: 1 }, headers: KEY });
    expect([first.status, first.body, first.headers.get("idempotent-replayed")]).toEqual([202, { done: true }, "false"]);
    const replay = await h.call("POST", "/r", { body: { a: 1 }, headers: KEY });
    expect([replay.status, replay.text, replay.headers.get("idempotent-replayed")]).toEqual([202, first.text, "true"]);
    expect(log).toEqual([
      ["claim", SCOPE, "key-0001"],
      ["reserve", true],
      ["settle", "0xaa"],
      ["handler"],
      ["complete", SCOPE, "key-0001", 202],
      ["outcome", "0xaa", 202],
      ["releaseSlot"],
      ["claim", SCOPE, "key-0001"],
      ["releasePayment", "0xaa"],
    ]);
  });

  it("settled, then refused: the key keeps the payment as its credit, and its retry is paid by it, not by the new proof", async () => {
    const log: CallLog = [];
    const refused = setup(log, { refuse: true });
    h = await serveStage(paidWrite, refused.spec, refused.hooks, refused.prepare);
    const r = await h.call("POST", "/r", { body: {}, headers: KEY });
    expect([r.status, r.body.error]).toEqual([409, "conflicting_operation"]);
    expect(log.slice(3)).toEqual([
      ["handler"],
      ["addPrepaid", SCOPE, "key-0001", "0xaa"],
      ["release", SCOPE, "key-0001"],
      ["outcome", "0xaa", 409],
      ["releaseSlot"],
    ]);

    log.length = 0;
    const retry = setup(log);
    retry.store.prepaid.set(`${SCOPE} key-0001`, { payer: "0x11", nonce: "0xaa" });
    await h.close();
    h = await serveStage(paidWrite, retry.spec, retry.hooks, retry.prepare);
    expect((await h.call("POST", "/r", { body: {}, headers: KEY })).status).toBe(202);
    expect(log).toEqual([
      ["claim", SCOPE, "key-0001"],
      ["reserve", true],
      ["settlePending", "0xaa"],
      ["releasePayment", "0xaa"],
      ["handler"],
      ["complete", SCOPE, "key-0001", 202],
      ["spent", "0xaa", 202],
      ["releaseSlot"],
    ]);
  });

  it("a failed settlement frees the key and runs nothing", async () => {
    const log: CallLog = [];
    const s = setup(log, { settles: false });
    h = await serveStage(paidWrite, s.spec, s.hooks, s.prepare);
    expect((await h.call("POST", "/r", { body: {}, headers: KEY })).status).toBe(204);
    expect(log).toEqual([["claim", SCOPE, "key-0001"], ["reserve", true], ["settle", "0xaa"], ["release", SCOPE, "key-0001"], ["releaseSlot"]]);
  });

  it("an unanswered settlement: 503, and the key keeps this payment as its credit (a retry with a fresh proof settles it, not both)", async () => {
    const log: CallLog = [];
    const s = setup(log, { settles: settlementUnknown("0x11") });
    h = await serveStage(paidWrite, s.spec, s.hooks, s.prepare);
    const r = await h.call("POST", "/r", { body: {}, headers: KEY });
    expect([r.status, r.body.error]).toEqual([503, "payment_settlement_unknown"]);
    expect(log.slice(3)).toEqual([["addPrepaid", SCOPE, "key-0001", "0xaa"], ["release", SCOPE, "key-0001"], ["releaseSlot"]]);
  });

  it("a credit whose settlement is still unknown stays the credit; this proof is released unsettled", async () => {
    const log: CallLog = [];
    const s = setup(log, { pending: "unknown" });
    s.store.prepaid.set(`${SCOPE} key-0001`, { payer: "0x11", nonce: "0xold" });
    h = await serveStage(paidWrite, s.spec, s.hooks, s.prepare);
    expect((await h.call("POST", "/r", { body: {}, headers: KEY })).status).toBe(503);
    expect(log.slice(2)).toEqual([
      ["settlePending", "0xold"],
      ["addPrepaid", SCOPE, "key-0001", "0xold"],
      ["releasePayment", "0xaa"],
      ["release", SCOPE, "key-0001"],
      ["releaseSlot"],
    ]);
  });

  it("no key, a reused key, a key in progress: refused before anything is settled, the proof released", async () => {
    const log: CallLog = [];
    const s = setup(log);
    h = await serveStage(paidWrite, s.spec, s.hooks, s.prepare);
    const none = await h.call("POST", "/r", { body: {} });
    expect([none.status, none.body.error]).toEqual([400, "invalid_request"]);
    s.store.rows.set(`${SCOPE} key-0001`, { fingerprint: "other", holder: "x" });
    const reused = await h.call("POST", "/r", { body: {}, headers: KEY });
    expect([reused.status, reused.body.error]).toEqual([422, "idempotency_key_reused"]);
    s.store.rows.clear();
    await h.call("POST", "/r", { body: {}, headers: { "idempotency-key": "key-0002" } });
    s.store.rows.get(`${SCOPE} key-0002`)!.response = undefined;
    const busy = await h.call("POST", "/r", { body: {}, headers: { "idempotency-key": "key-0002" } });
    expect([busy.status, busy.body.error]).toEqual([409, "idempotency_in_progress"]);
    expect(log.filter(([what]) => what === "releasePayment")).toHaveLength(3);
  });
});
