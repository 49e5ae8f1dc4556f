/**
 * What one protection pass reads and writes in the store at once, on the run's store: the position samples of
 * many treasuries in one transaction (`sampleMany`, kept or not exactly as `sample` keeps them) and every open
 * protection claim in one query (`allOpen`).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../gateway/src/store/db";
import { DelegationStore } from "../../gateway/src/store/delegation-store";
import { openDatabase } from "../../gateway/src/store/open-database";
import { PositionSampleStore, SAMPLE_EVERY_MS, SAMPLE_LTV_STEP, type TreasurySample } from "../../gateway/src/store/position-sample-store";
import { ProtectionClaimStore } from "../../gateway/src/store/protection-claim-store";
import { TreasuryStore } from "../../gateway/src/store/treasury-store";
import { countWriteTransactions, freshDatabase } from "../helpers/store";

const T0 = Date.parse("2026-11-28T10:00:00.000Z");
const iso = (ms: number) => new Date(T0 + ms).toISOString();

let db: Db;
beforeAll(async () => {
  db = await openDatabase(await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "pass-store-"))));
});
afterAll(() => db?.close());

let made = 0;
async function treasury(): Promise<string> {
  const id = `trs_pass${(++made).toString().padStart(6, "0")}`;
  await new TreasuryStore(db).insert({
    id,
    walletAddress: "0x00000000000000000000000000000000000000aa",
    chain: "base",
    preset: "balanced",
    executionMode: "managed",
    status: "active",
    origin: "registration",
    ownership: "unproven",
    holdings: { btcUnits: 0n, ethUnits: 0n, usdcMicro: 0n, debtMicro: 0n },
    createdAt: iso(0),
    updatedAt: iso(0),
  });
  return id;
}

const sampleAt = (treasuryId: string, ms: number, ltv: number): TreasurySample => ({
  treasuryId,
  at: iso(ms),
  ltv,
  healthScore: 1.5 - ltv / 100,
  collateralMicro: 10_000_000_000n + BigInt(Math.round(ltv * 1_000)),
  debtMicro: BigInt(Math.round(ltv * 100_000_000)),
});

describe("a pass's position samples, all at once", () => {
  it("sampleMany keeps and writes exactly what sample would, row by row (random passes over a few treasuries)", async () => {
    const samples = new PositionSampleStore(db);
    // a pass: samples of 3 treasuries (one may come twice), some seconds on (or back), the LTV moved less or more than a step
    const pass = fc.array(
      fc.record({ who: fc.nat({ max: 2 }), dtMs: fc.integer({ min: -5_000, max: 70_000 }), ltv: fc.double({ min: 50, max: 51.5, noNaN: true }) }),
      {
        maxLength: 8,
      },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(pass, { minLength: 1, maxLength: 6 }), async (passes) => {
        const one = [await treasury(), await treasury(), await treasury()];
        const many = [await treasury(), await treasury(), await treasury()];
        const clock = [0, 0, 0];
        for (const p of passes) {
          const rows = p.map((s) => ({ who: s.who, ms: (clock[s.who] = Math.max(0, clock[s.who]! + s.dtMs)), ltv: s.ltv }));
          const each: boolean[] = [];
          for (const r of rows) each.push(await samples.sample(one[r.who]!, sampleAt(one[r.who]!, r.ms, r.ltv)));
          expect(await samples.sampleMany(rows.map((r) => sampleAt(many[r.who]!, r.ms, r.ltv)))).toEqual(each);
        }
        for (let i = 0; i < 3; i++) expect(await samples.history(many[i]!, iso(0))).toEqual(await samples.history(one[i]!, iso(0)));
      }),
      { numRuns: 25 },
    );
  });

  it("the rules it keeps: a minute apart, or an LTV move of half a point, never an earlier time; one write for a pass of 1,200 treasuries", async () => {
    const samples = new PositionSampleStore(db);
    const id = await treasury();
    expect(
      await samples.sampleMany([
        sampleAt(id, 0, 50),
        sampleAt(id, 1_000, 50 + SAMPLE_LTV_STEP / 2), // too soon, too small a move
        sampleAt(id, 2_000, 50 + SAMPLE_LTV_STEP), // moved
        sampleAt(id, 1_500, 70), // earlier than the last
        sampleAt(id, 2_000 + SAMPLE_EVERY_MS, 50 + SAMPLE_LTV_STEP), // a minute on
      ]),
    ).toEqual([true, false, true, false, true]);
    expect((await samples.history(id, iso(0))).map((s) => s.at)).toEqual([iso(0), iso(2_000), iso(2_000 + SAMPLE_EVERY_MS)]);
    expect(await samples.sampleMany([])).toEqual([]);

    const ids: string[] = [];
    for (let i = 0; i < 1_200; i++) ids.push(await treasury());
    let written: boolean[] = [];
    const writes = await countWriteTransactions(db, async () => {
      written = await samples.sampleMany(ids.map((t, i) => sampleAt(t, 5_000, 30 + (i % 40))));
    });
    expect(writes).toBe(1);
    expect(written.every(Boolean)).toBe(true);
    const last = await samples.history(ids[1_199]!, iso(0));
    expect(last).toEqual([
      {
        at: iso(5_000),
        ltv: 30 + (1_199 % 40),
        healthScore: 1.5 - (30 + (1_199 % 40)) / 100,
        collateralMicro: 10_000_000_000n + BigInt(69_000),
        debtMicro: 6_900_000_000n,
      },
    ]);
  });
});

describe("every open protection claim in one query", () => {
  it("allOpen lists the claims in hand with their lease, and no longer a finished one", async () => {
    const claims = new ProtectionClaimStore(db);
    const delegations = new DelegationStore(db);
    const before = (await claims.allOpen()).length;
    const ids = [await treasury(), await treasury()];
    for (const [i, id] of ids.entries())
      await delegations.attachProven({
        treasuryId: id,
        chain: "base",
        safe: `0x5afe00000000000000000000000000000000000${i}`,
        module: "0x00000000000000000000000000000000000000b0",
        automation: "0x00000000000000000000000000000000000000c0",
        protectBelowHealth: 1.3,
        proof: {},
        at: iso(0),
      });
    const now = new Date(T0);
    expect((await claims.claim(ids[0]!, "eng_one", "act_1", now)).kind).toBe("claimed");
    expect((await claims.claim(ids[1]!, "eng_two", "act_2", now)).kind).toBe("claimed");
    const open = (await claims.allOpen()).filter((c) => ids.includes(c.treasuryId));
    expect(open).toHaveLength(2);
    expect(open[0]).toMatchObject({ treasuryId: ids[0], holder: "eng_one", actionId: "act_1", state: "deciding", sent: [] });
    expect(open[0]!.expiresAt > now.toISOString()).toBe(true);
    expect(await claims.get(ids[1]!)).toEqual((({ expiresAt: _, ...c }) => c)(open[1]!));
    expect(await claims.finish(ids[0]!, "eng_one")).toBe(true);
    expect((await claims.allOpen()).filter((c) => ids.includes(c.treasuryId)).map((c) => c.treasuryId)).toEqual([ids[1]]);
    expect((await claims.allOpen()).length).toBe(before + 1);
  });
});
