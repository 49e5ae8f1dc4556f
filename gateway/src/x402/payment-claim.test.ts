/** payment-claim.ts: the one claim of every scheme: settled once by its scheme, released, lapsed, or kept pending. */
import { describe, expect, it } from "vitest";
import { KnownPayers } from "./known-payers";
import { paymentClaim } from "./payment-claim";
import type { AnyScheme, LockedPayment, SchemeEnv, SchemeSettlement } from "./schemes/scheme";

const PAYER = "0x1111111111111111111111111111111111111111" as const;
const NOW = new Date("2026-01-01T00:00:00Z");

/** an env whose stores log what the claim does to them */
function envOf(log: unknown[][]) {
  const payments = {
    release: async (...a: unknown[]) => void log.push(["release", ...a]),
    lapse: async (...a: unknown[]) => void log.push(["lapse", ...a]),
    pending: async (...a: unknown[]) => void log.push(["pending", ...a]),
    outcome: async (...a: unknown[]) => void log.push(["outcome", ...a]),
    renew: async (...a: unknown[]) => (log.push(["renew", ...a]), true),
  };
  const treasuries = { removeUnused: async (id: string) => void log.push(["removeUnused", id]) };
  const knownPayers = new KnownPayers(async () => false);
  const ctx = {
    clock: { now: () => NOW },
    tx: { transaction: async <T>(fn: () => Promise<T>) => (log.push(["tx"]), fn()) },
    stores: { payments, treasuries },
  };
  return { env: { ctx, knownPayers } as unknown as SchemeEnv, knownPayers };
}

/** a scheme whose settlement answers `settles` (logged) */
const schemeOf = (log: unknown[][], settles: SchemeSettlement): AnyScheme =>
  ({
    name: "test",
    settle: async (_env: unknown, _locked: unknown, used: unknown) => (log.push(["settle", used]), settles),
    settledAgain: async (_env: unknown, _locked: unknown, transaction: string) => ({ "PAYMENT-RESPONSE": `again:${transaction}` }),
  }) as unknown as AnyScheme;

const locked = (over: Partial<LockedPayment> = {}): LockedPayment => ({
  payer: PAYER,
  nonce: "n1",
  settling: {},
  route: { method: "GET", path: "/r" },
  price: { method: "GET", path: "/r", atomic: 1000n, description: "r" },
  treasuryId: "trs_1",
  created: true,
  holder: "pay_1",
  takenOver: false,
  ...over,
});

describe("payment-claim", () => {
  it("settled: the scheme's headers, the payer known, `used` handed to the scheme; a second settle throws", async () => {
    const log: unknown[][] = [];
    const { env, knownPayers } = envOf(log);
    const claim = paymentClaim(env, schemeOf(log, { kind: "settled", headers: { "PAYMENT-RESPONSE": "ok" } }), locked());
    expect([claim.payer, claim.nonce, claim.treasuryId]).toEqual([PAYER, "n1", "trs_1"]);
    expect(await claim.settle(700n)).toEqual({ kind: "settled", headers: { "PAYMENT-RESPONSE": "ok" } });
    expect(log).toEqual([["settle", 700n]]);
    expect(await knownPayers.has(PAYER)).toBe(true);
    await expect(claim.settle()).rejects.toThrow("payment already settled or released");
    await claim.release(); // settled: nothing to free
    expect(log).toEqual([["settle", 700n]]);
  });

  it("failed: the lock released with the treasury made for it, in one transaction, and the refusal returned", async () => {
    const log: unknown[][] = [];
    const { env, knownPayers } = envOf(log);
    const refusal = { error: "settlement_failed", extra: { reason: "insufficient_funds" } };
    const claim = paymentClaim(env, schemeOf(log, { kind: "failed", refusal }), locked());
    expect(await claim.settle()).toEqual({ kind: "refused", refusal });
    expect(log).toEqual([["settle", undefined], ["tx"], ["release", PAYER, "n1", "pay_1"], ["removeUnused", "trs_1"]]);
    expect(await knownPayers.has(PAYER)).toBe(false);
  });

  it("spent: the money moved but the call is not served: its outcome 402, the lock kept", async () => {
    const log: unknown[][] = [];
    const { env } = envOf(log);
    const refusal = { error: "settlement_failed", extra: { reason: "settled_below_use" } };
    const claim = paymentClaim(env, schemeOf(log, { kind: "spent", refusal }), locked());
    expect(await claim.settle(900n)).toEqual({ kind: "refused", refusal });
    await claim.release();
    expect(log).toEqual([
      ["settle", 900n],
      ["outcome", PAYER, "n1", 402],
    ]);
  });

  it("unknown: kept pending with what to settle again, and payment_settlement_unknown thrown", async () => {
    const log: unknown[][] = [];
    const { env } = envOf(log);
    const claim = paymentClaim(env, schemeOf(log, { kind: "unknown", settlement: '{"again":1}' }), locked());
    await expect(claim.settle()).rejects.toMatchObject({
      code: "payment_settlement_unknown",
      fields: { payer: PAYER, retry_after_seconds: 2 },
      headers: { "Retry-After": "2" },
    });
    await claim.release();
    expect(log).toEqual([
      ["settle", undefined],
      ["pending", PAYER, "n1", "pay_1", '{"again":1}', NOW],
    ]);
  });

  it("a dead request's settled payment is served free: the scheme's headers again, no settlement", async () => {
    const log: unknown[][] = [];
    const { env } = envOf(log);
    const claim = paymentClaim(env, schemeOf(log, { kind: "settled", headers: {} }), locked({ alreadySettled: { transaction: "0xabc" } }));
    expect(await claim.settle()).toEqual({ kind: "settled", headers: { "PAYMENT-RESPONSE": "again:0xabc" } });
    expect(log).toEqual([]);
  });

  it("released: a fresh lock is freed with its new treasury; a taken-over or settled one lapses; once", async () => {
    const log: unknown[][] = [];
    const { env } = envOf(log);
    const scheme = schemeOf(log, { kind: "settled", headers: {} });
    const fresh = paymentClaim(env, scheme, locked({ created: false }));
    await fresh.release();
    await fresh.release();
    expect(log).toEqual([["tx"], ["release", PAYER, "n1", "pay_1"]]);
    log.length = 0;
    await paymentClaim(env, scheme, locked({ takenOver: true })).release();
    await paymentClaim(env, scheme, locked({ alreadySettled: { transaction: "0xabc" } })).release();
    expect(log).toEqual([
      ["lapse", PAYER, "n1", "pay_1", NOW],
      ["lapse", PAYER, "n1", "pay_1", NOW],
    ]);
    await expect(fresh.settle()).rejects.toThrow("payment already settled or released");
  });

  it("renews its lease and records its outcome under its holder", async () => {
    const log: unknown[][] = [];
    const { env } = envOf(log);
    const claim = paymentClaim(env, schemeOf(log, { kind: "settled", headers: {} }), locked());
    expect(await claim.renew()).toBe(true);
    await claim.outcome(200);
    expect(log).toEqual([
      ["renew", PAYER, "n1", "pay_1", NOW],
      ["outcome", PAYER, "n1", 200],
    ]);
  });
});
