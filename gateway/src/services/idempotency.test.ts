/** The Idempotency-Key guard (spec 8) against a real SQLite store: claim, replay, 422, 409, what is remembered. */
import { describe, expect, it, vi } from "vitest";
import { statusOf } from "../http/errors";
import { TreasuryError } from "@treasury/core/lib/errors";
import { openDatabase } from "../store/open-database";
import { IDEMPOTENCY_RETENTION_MS, IdempotencyStore } from "../store/idempotency-store";
import { LEASE_MS } from "../store/lease";
import { canonicalJson } from "../lib/canonical-json";
import { checkIdempotencyKey, idempotent, requestFingerprint } from "./idempotency";

const fresh = async () => new IdempotencyStore(await openDatabase({ file: ":memory:" }));
const at = new Date("2026-11-22T00:00:00.000Z");
const call = (key: string, fingerprint = "fp", now = at) => ({ scope: "key:1", key, fingerprint, now });
const ok =
  (status = 200, body = '{"ok":true}') =>
  async () => ({ status, headers: { "x-a": "1" }, body });
const apiError = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as TreasuryError;
  }
  throw new Error("expected an TreasuryError");
};

describe("fingerprints", () => {
  it("canonical JSON sorts keys at every depth and keeps arrays in order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(canonicalJson(undefined)).toBe("null");
    expect(canonicalJson("x")).toBe('"x"');
    expect(requestFingerprint("POST /a", { b: 1, a: 2 })).toBe(requestFingerprint("POST /a", { a: 2, b: 1 }));
    expect(requestFingerprint("POST /a", { a: 1 })).not.toBe(requestFingerprint("POST /b", { a: 1 }));
    expect(requestFingerprint("POST /a", { a: 1 })).not.toBe(requestFingerprint("POST /a", { a: 2 }));
    expect(requestFingerprint("POST /a", undefined)).toBe(requestFingerprint("POST /a", null));
    expect(requestFingerprint("POST /a", {})).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keys are 8 to 120 characters of printable ASCII, else a typed 400 naming the header", () => {
    expect(checkIdempotencyKey("a".repeat(8))).toBe("a".repeat(8));
    expect(checkIdempotencyKey("a".repeat(120))).toBe("a".repeat(120));
    expect(checkIdempotencyKey("k!~ inside 0")).toBe("k!~ inside 0");
    for (const [key, why] of [
      [undefined, "required"],
      ["a".repeat(7), "must be 8 to 120 characters"],
      ["a".repeat(121), "must be 8 to 120 characters"],
      ["clé-idempotente", "must be printable ASCII (0x20-0x7E), with no space at either end"],
      ["tab\tinside-key", "must be printable ASCII (0x20-0x7E), with no space at either end"],
      [" leading-space", "must be printable ASCII (0x20-0x7E), with no space at either end"],
    ] as const) {
      try {
        checkIdempotencyKey(key);
        throw new Error("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(TreasuryError);
        expect(statusOf(e as TreasuryError)).toBe(400);
        expect((e as TreasuryError).code).toBe("invalid_request");
        expect((e as TreasuryError).message).toBe(
          "an Idempotency-Key is required for this call (8 to 120 characters of printable ASCII, unique per state-changing call)",
        );
        expect((e as TreasuryError).fields.details).toEqual([{ location: "header", field: "Idempotency-Key", message: why }]);
      }
    }
  });
});

describe("idempotent", () => {
  it("runs once, then replays the stored outcome byte for byte", async () => {
    const store = await fresh();
    let runs = 0;
    const run = async () => {
      runs++;
      return { status: 202, headers: { "x-a": "1" }, body: '{"n":1}' };
    };
    expect(await idempotent(store, call("key-00000001"), run)).toEqual({ status: 202, headers: { "x-a": "1" }, body: '{"n":1}', replayed: false });
    expect(await idempotent(store, call("key-00000001"), run)).toEqual({ status: 202, headers: { "x-a": "1" }, body: '{"n":1}', replayed: true });
    expect(runs).toBe(1);
  });

  it("the same key for another request is 422; in progress is 409 with Retry-After", async () => {
    const store = await fresh();
    await idempotent(store, call("key-00000002", "one"), ok());
    const mismatch = await apiError(idempotent(store, call("key-00000002", "two"), ok()));
    expect([statusOf(mismatch), mismatch.code, mismatch.message]).toEqual([
      422,
      "idempotency_key_reused",
      "this Idempotency-Key was already used with a different request; use a fresh key",
    ]);
    let release!: () => void;
    const slow = idempotent(store, call("key-00000003"), () => new Promise((r) => (release = () => r({ status: 200, headers: {}, body: "{}" }))));
    const busy = await apiError(idempotent(store, call("key-00000003"), ok()));
    expect([statusOf(busy), busy.code, busy.headers]).toEqual([409, "idempotency_in_progress", { "Retry-After": "1" }]);
    expect(busy.message).toBe("a request with this Idempotency-Key is still being processed; retry shortly");
    release();
    await slow;
  });

  it("a claim whose request died is reclaimed when its lease expires; a live one renews and keeps it", async () => {
    const store = await fresh();
    expect(await store.claim("key:1", "key-00000009", "fp", at, "req_dead")).toMatchObject({ kind: "claimed", reclaimed: false });
    // within the lease: still in progress
    expect(await store.claim("key:1", "key-00000009", "fp", new Date(at.getTime() + LEASE_MS - 1), "req_retry")).toEqual({ kind: "in_progress" });
    // a different body is still a mismatch, lease or not
    expect(await store.claim("key:1", "key-00000009", "other", new Date(at.getTime() + LEASE_MS), "req_retry")).toEqual({ kind: "mismatch" });
    // the lease ran out: the retry takes the claim over
    expect(await store.claim("key:1", "key-00000009", "fp", new Date(at.getTime() + LEASE_MS), "req_retry")).toEqual({
      kind: "claimed",
      holder: "req_retry",
      reclaimed: true,
    });
    // the dead holder can no longer complete or release it (fencing)
    await store.complete("key:1", "key-00000009", { status: 200, headers: {}, body: '{"dead":true}' }, "req_dead");
    await store.release("key:1", "key-00000009", "req_dead");
    expect(await store.renew("key:1", "key-00000009", "req_dead", at)).toBe(false);
    // the live holder renews past the original lease and completes it
    expect(await store.renew("key:1", "key-00000009", "req_retry", new Date(at.getTime() + 2 * LEASE_MS))).toBe(true);
    expect(await store.claim("key:1", "key-00000009", "fp", new Date(at.getTime() + 2 * LEASE_MS), "req_third")).toEqual({ kind: "in_progress" });
    await store.complete("key:1", "key-00000009", { status: 201, headers: {}, body: '{"live":true}' }, "req_retry");
    expect(await store.claim("key:1", "key-00000009", "fp", new Date(at.getTime() + 3 * LEASE_MS), "req_fourth")).toEqual({
      kind: "replay",
      response: { status: 201, headers: {}, body: '{"live":true}' },
    });
  });

  it("409, 429 and 5xx answers are never stored as the key's result: the key is free again", async () => {
    for (const status of [409, 429, 500, 503]) {
      const store = await fresh();
      expect((await idempotent(store, call("key-00000004"), ok(status))).replayed).toBe(false);
      const again = await idempotent(store, call("key-00000004"), ok(200, '{"second":true}'));
      expect([again.status, again.body, again.replayed]).toEqual([200, '{"second":true}', false]);
    }
  });

  it("typed 4xx answers other than 409 and 429 are stored like successes", async () => {
    for (const status of [400, 403, 404, 410, 422]) {
      const store = await fresh();
      await idempotent(store, call("key-00000005"), ok(status, '{"error":"x"}'));
      const again = await idempotent(store, call("key-00000005"), ok(200));
      expect([again.status, again.body, again.replayed]).toEqual([status, '{"error":"x"}', true]);
    }
  });

  it("an unexpected failure frees the key and rethrows", async () => {
    const store = await fresh();
    await expect(idempotent(store, call("key-00000006"), async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect((await idempotent(store, call("key-00000006"), ok())).replayed).toBe(false);
  });

  it("inside the caller's transaction (leased: false) it keeps no lease, and leaves a failure's claim to the caller's rollback", async () => {
    const store = await fresh();
    let renewals = 0;
    let releases = 0;
    const spy = Object.assign(Object.create(Object.getPrototypeOf(store)), store, {
      renew: (...a: Parameters<IdempotencyStore["renew"]>) => (renewals++, store.renew(...a)),
      release: (...a: Parameters<IdempotencyStore["release"]>) => (releases++, store.release(...a)),
    }) as IdempotencyStore;
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      for (const leased of [undefined, false]) {
        renewals = 0;
        let finish!: () => void;
        const running = idempotent(
          spy,
          { ...call(`key-lease-${String(leased)}`), leased },
          () => new Promise((r) => (finish = () => r({ status: 200, headers: {}, body: "{}" }))),
        );
        await new Promise((r) => setImmediate(r)); // the claim is made, the run has started
        vi.advanceTimersByTime(LEASE_MS);
        finish();
        expect((await running).status).toBe(200);
        if (leased === false) expect(renewals).toBe(0);
        else expect(renewals).toBeGreaterThan(0);
      }
    } finally {
      vi.useRealTimers();
    }
    await expect(idempotent(spy, { ...call("key-failed-1"), leased: false }, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(releases).toBe(0);
    await expect(idempotent(spy, call("key-failed-2"), async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(releases).toBe(1);
  });

  it("keys are scoped, and kept 24 hours", async () => {
    const store = await fresh();
    await idempotent(store, call("key-00000007"), ok(200, '{"a":1}'));
    expect((await idempotent(store, { ...call("key-00000007"), scope: "key:2" }, ok(201))).status).toBe(201);
    expect(IDEMPOTENCY_RETENTION_MS).toBe(86_400_000);
    const justBefore = new Date(at.getTime() + IDEMPOTENCY_RETENTION_MS - 1);
    expect((await idempotent(store, call("key-00000007", "fp", justBefore), ok(204))).replayed).toBe(true);
    const expired = new Date(at.getTime() + IDEMPOTENCY_RETENTION_MS);
    const after = await idempotent(store, call("key-00000007", "other", expired), ok(204));
    expect([after.status, after.replayed]).toEqual([204, false]);
    expect(await store.purgeExpired(new Date(expired.getTime() + IDEMPOTENCY_RETENTION_MS))).toBe(2);
  });

  it("a prepaid credit is taken once, only for its own key and request", async () => {
    const store = await fresh();
    await store.addPrepaid("payer:0xa", "key-00000008", "fp", { payer: "0xA", nonce: "0xN" }, at);
    expect(await store.takePrepaid("payer:0xa", "key-00000008", "other")).toBeUndefined();
    expect(await store.takePrepaid("payer:0xb", "key-00000008", "fp")).toBeUndefined();
    expect(await store.takePrepaid("payer:0xa", "key-00000008", "fp")).toEqual({ payer: "0xa", nonce: "0xn" });
    expect(await store.takePrepaid("payer:0xa", "key-00000008", "fp")).toBeUndefined();
  });
});
