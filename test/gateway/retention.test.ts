/**
 * Tables do not grow with traffic: expired idempotency records, ended rate-limit windows and payments
 * settled over a week ago, position samples after 30 days are swept (gateway/src/store/retention.ts); what is still in force is kept,
 * and a payment lock that never reached an outcome (a crash to reconcile) is kept whatever its age.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAYMENT_RETENTION_MS, SAMPLE_RETENTION_MS, sweepExpired } from "../../gateway/src/store/retention";
import { sandboxTenant } from "../helpers/treasury";
import { IDEMPOTENCY_RETENTION_MS } from "../../gateway/src/store/idempotency-store";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowCount, rowsOf } from "../helpers/rows";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ RETENTION_SWEEP_MS: "0" });
});
afterAll(() => gw.close());

const count = (table: string) => rowCount(gw.ctx.db, table);

describe("retention sweep", () => {
  it("sweeps what expired and keeps what is in force", async () => {
    const s = gw.ctx.stores;
    const t0 = new Date("2026-11-01T00:00:00.000Z");
    const at = (ms: number) => new Date(t0.getTime() + ms);
    const before = { idem: await count("idempotency_keys"), rl: await count("rate_limit_hits"), pay: await count("x402_payments") };

    // an answered request and a request in progress, one day apart
    const old = await s.idempotency.claim("sweep-scope", "old-key-0001", "h1", t0, "holder-1");
    if (old.kind !== "claimed") throw new Error(old.kind);
    await s.idempotency.complete("sweep-scope", "old-key-0001", { status: 200, headers: {}, body: "{}" }, "holder-1");
    expect((await s.idempotency.claim("sweep-scope", "new-key-0001", "h2", at(IDEMPOTENCY_RETENTION_MS), "holder-2")).kind).toBe("claimed");
    // a rate-limit window that ended, one still running
    await s.rateLimits.hit("sweep:ended", 60_000, t0.getTime());
    await s.rateLimits.hit("sweep:running", 60_000, at(IDEMPOTENCY_RETENTION_MS).getTime());
    // a settled payment, and a lock that never got an outcome
    const lock = (nonce: string) =>
      s.payments.lock({
        payer: "0x00000000000000000000000000000000000000aa",
        nonce,
        route: "GET /api/v1/health",
        amountAtomic: 1000n,
        treasuryId: null,
        holder: "h",
        now: t0,
      });
    expect((await lock("0x01")).kind).toBe("locked");
    await s.payments.settled("0x00000000000000000000000000000000000000aa", "0x01", "0xabc", "trs_1", t0.toISOString());
    expect((await lock("0x02")).kind).toBe("locked");
    // an instance that last beat at t0 (a process that died), and this gateway's own, beating now
    await s.instances.beat("ins0000000000aa", t0);

    // a day and a second later: the old answer, the ended window and the dead instance go; the payment is kept (a week)
    const day = await sweepExpired(s, at(IDEMPOTENCY_RETENTION_MS + 1000));
    expect(day).toEqual({ idempotency: 1, rate_limit_windows: 1, payments: 0, position_samples: 0, instances: 1 });
    expect(await count("instances")).toBe(1);
    expect(await count("idempotency_keys")).toBe(before.idem + 1);
    expect(await count("rate_limit_hits")).toBe(before.rl + 1);

    // past a week: the settled payment goes, the unresolved lock stays
    const week = await sweepExpired(s, at(PAYMENT_RETENTION_MS + 1000));
    expect(week.payments).toBe(1);
    expect(await count("x402_payments")).toBe(before.pay + 1);
    expect(await rowsOf(gw.ctx.db, "x402_payments", { nonce: "0x02" }, { columns: ["state"] })).toEqual([{ state: "locked" }]);
  });

  it("keeps position samples 30 days", async () => {
    const s = gw.ctx.stores;
    const { treasuryId } = await sandboxTenant(gw.url);
    const t0 = new Date("2026-11-01T00:00:00.000Z");
    const sample = (at: Date, ltv: number) =>
      s.positionSamples.sample(treasuryId, { at: at.toISOString(), ltv, healthScore: 2, collateralMicro: 1n, debtMicro: 1n });
    expect(await sample(t0, 40)).toBe(true);
    // within a minute and the same LTV: not another row; a move of half a point is
    expect(await sample(new Date(t0.getTime() + 30_000), 40.2)).toBe(false);
    expect(await sample(new Date(t0.getTime() + 31_000), 41)).toBe(true);
    expect(await sample(new Date(t0.getTime() + SAMPLE_RETENTION_MS), 41)).toBe(true);
    const swept = await sweepExpired(s, new Date(t0.getTime() + SAMPLE_RETENTION_MS + 40_000));
    expect(swept.position_samples).toBe(2);
    expect((await s.positionSamples.history(treasuryId, t0.toISOString())).map((p) => p.ltv)).toEqual([41]);
  });
});
