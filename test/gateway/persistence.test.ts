import { describe, expect, it } from "vitest";
import { FEE_TIERS } from "@treasury/core/domain/fee-schedule";
import { newId } from "@treasury/core/lib/ids";
import { migrationsFor, openDatabase, schemaVersion } from "../../gateway/src/store/open-database";
import { MIGRATIONS, POSTGRES_MIGRATIONS } from "../../gateway/src/store/migrations";
import { call, startTestGateway } from "../helpers/gateway";
import { rowsOf, setRow } from "../helpers/rows";
import { TEST_STORE } from "../helpers/store";
import { feeOf } from "@treasury/core/actions";

describe("persistence across a restart", () => {
  it("keeps treasuries, keys, access requests, the fee audit trail and the ratchet", async () => {
    let gw = await startTestGateway();
    const treasury = (await call(gw.url, "POST", "/api/v1/treasuries", { body: { wallet_address: "0x3333333333333333333333333333333333333333" } })).body;
    const sandbox = (await call(gw.url, "POST", "/api/v1/sandbox/keys")).body;
    const request = (
      await call(gw.url, "POST", "/api/v1/agents/apply", {
        body: { operator_name: "Bo", operator_email: "bo@example.com", use_case: "Monthly ETH accumulation, no borrowing at all." },
      })
    ).body;

    // a fee-bearing execution large enough to cross the first volume threshold
    const amount = FEE_TIERS[1]!.minVolumeMicro;
    const fee = feeOf("borrow", amount, 0);
    await gw.ctx.stores.fees.record({
      id: newId("fee"),
      treasuryId: treasury.treasury_id,
      action: "borrow",
      amountMicro: amount,
      feeMicro: fee.feeMicro,
      feeBps: Number(fee.feeBps),
      feeBasis: fee.basis,
      trigger: "test",
      executionRef: "brw_test",
      createdAt: new Date().toISOString(),
      environment: "live",
      countsTowardVolume: true,
    });
    expect((await call(gw.url, "GET", "/fees.json")).body.current_tier.tier).toBe("growth");

    gw = await gw.restart();
    try {
      expect((await call(gw.url, "GET", `/api/v1/treasuries/${treasury.treasury_id}`)).body.wallet_address).toBe(treasury.wallet_address);
      expect((await call(gw.url, "GET", `/api/v1/treasuries/${sandbox.treasury_id}`)).status).toBe(200);
      expect((await call(gw.url, "GET", `/api/v1/agents/apply/${request.id}`)).body.status).toBe("received");
      const fees = (await call(gw.url, "GET", "/fees.json")).body;
      expect(fees.current_tier).toMatchObject({ tier: "growth", cycle_fee_pct: 1.75, deposit_fee_pct: 2 });
      const audit = await gw.ctx.stores.fees.forTreasury(treasury.treasury_id);
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ action: "borrow", trigger: "test", feeTier: "launch" });
      // the key still authenticates as a credential (its hash survived)
      const { lookupBearer } = await import("../../gateway/src/services/credentials");
      expect((await lookupBearer(gw.ctx, `Bearer ${treasury.api_key}`)).kind).toBe("valid");
      expect((await lookupBearer(gw.ctx, `Bearer ${sandbox.key}`)).kind).toBe("valid");
    } finally {
      await gw.close();
    }
  });

  it("the database refuses to move the ratchet back", async () => {
    const gw = await startTestGateway();
    try {
      await setRow(gw.ctx.db, "fee_ratchet", { id: 1 }, { tier_index: 2 });
      await expect(setRow(gw.ctx.db, "fee_ratchet", { id: 1 }, { tier_index: 1 })).rejects.toThrow(/one-way/);
    } finally {
      await gw.close();
    }
  });

  it("applies versioned migrations once", async () => {
    const gw = await startTestGateway();
    await gw.close();
    const db = await openDatabase(gw.database);
    expect(db.dialect, "the run's store backend").toBe(TEST_STORE);
    const history = migrationsFor(db.dialect);
    expect(await schemaVersion(db)).toBe(history.at(-1)!.version);
    const rows = await rowsOf(db, "schema_migrations", {}, { columns: ["version", "name"], orderBy: "version" });
    expect(rows).toEqual(history.map((m) => ({ version: m.version, name: m.name })));
    // both backends end at the same version, with the same name for it
    expect(MIGRATIONS.at(-1)).toMatchObject({ version: POSTGRES_MIGRATIONS.at(-1)!.version, name: POSTGRES_MIGRATIONS.at(-1)!.name });
    await db.close();
  });
});

describe("identifiers", () => {
  it("carry 128 random bits", () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newId("trs")));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(id).toMatch(/^trs_[0-9a-f]{32}$/);
  });
});
