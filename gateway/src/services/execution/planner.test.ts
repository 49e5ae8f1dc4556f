/**
 * The plan made once (Planner.plan, before any store transaction) and what the commit does with it without
 * the chain: `repriced` moves the fee to the store's tier now, `confirm` checks the plan again on a position
 * read after a paid request's settlement. A real store (SQLite in memory) holds the fee ratchet; the chain
 * gateway has no chain, so any call to one would fail the test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseUsdc } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import { ChainGateway, type ChainPosition } from "../../chain/chain-gateway";
import type { Db } from "../../store/db";
import { FeeStore } from "../../store/fee-store";
import { openDatabase } from "../../store/open-database";
import type { TreasuryRecord } from "../../store/treasury-store";
import { Planner } from "./planner";

let db: Db;
let planner: Planner;

beforeAll(async () => {
  db = await openDatabase({ file: ":memory:" });
  planner = new Planner({ stores: { fees: new FeeStore(db) } } as never, new ChainGateway({}, 1));
});
afterAll(() => db?.close());

const treasury = { id: "trs_1", chain: "base", preset: "balanced", walletAddress: "0x00000000000000000000000000000000000000aa" } as unknown as TreasuryRecord;
const position = (walletUsdc: bigint): ChainPosition => ({
  collateralMicro: parseUsdc(10_000),
  debtMicro: 0n,
  collateralBase: 10_000n * 10n ** 8n,
  debtBase: 0n,
  liquidationThresholdBps: 8050,
  healthFactorWad: 2n ** 256n - 1n,
  blockNumber: 1n,
  holdings: { aUsdc: 0n, aWeth: 5n * 10n ** 18n, aBtc: 0n, walletUsdc },
});
const setTier = (tier: number) => db.run("UPDATE fee_ratchet SET tier_index = ? WHERE id = 1", tier);

describe("a plan made once", () => {
  it("repriced: a moved fee tier re-prices the fee and the figures on the plan's position; the same tier keeps the plan", async () => {
    await setTier(0);
    const chain = position(0n);
    const plan = await planner.plan(treasury, { action: "borrow", amountMicro: parseUsdc(1000), params: {} }, chain);
    expect(plan.tierIndex).toBe(0);
    expect(plan.fee).toMatchObject({ feeMicro: parseUsdc(20), feeBps: 200n });
    expect(planner.repriced(treasury, plan, chain, 0)).toBe(plan);
    const growth = planner.repriced(treasury, plan, chain, 1);
    expect(growth.tierIndex).toBe(1);
    expect(growth.fee).toMatchObject({ feeMicro: parseUsdc(17.5), feeBps: 175n });
    expect(growth.request).toBe(plan.request);
    expect(growth.ltvBefore).toBe(plan.ltvBefore);
    // the fee is paid out of what is borrowed: the debt after is the amount borrowed at either tier
    expect(plan.debtAfterMicro).toBe(parseUsdc(1000));
    expect(growth.debtAfterMicro).toBe(parseUsdc(1000));
  });

  it("confirm: the plan checked on the position read after the settlement; the wallet's USDC gone is a refusal", async () => {
    await setTier(0);
    const plan = await planner.plan(treasury, { action: "deposit", amountMicro: parseUsdc(500), params: {} }, position(parseUsdc(500)));
    expect(planner.confirm(treasury, plan, position(parseUsdc(500))).fee.feeMicro).toBe(parseUsdc(10));
    const refused = (() => {
      try {
        planner.confirm(treasury, plan, position(parseUsdc(499)));
        return null;
      } catch (err) {
        return err as TreasuryError;
      }
    })();
    expect(refused).toBeInstanceOf(TreasuryError);
    expect(refused!.code).toBe("insufficient_balance");
    expect(refused!.message).toBe("the wallet holds 499 USDC on base; this deposit needs 500");
  });
});
