/**
 * Protection proven with Aave as the judge (bench/protection/runner.ts): a
 * managed Safe and its unprotected twin live through price paths played block
 * by block on the fork (feeds and Uniswap pools moved together), a liquidator
 * calling Aave's liquidationCall on anything under 1. With protection on:
 * no liquidation, the health factor never under 1, back above the trigger
 * within the block it crossed it (the engine takes its pass every block), one
 * deleverage per trigger, also with three engines at once and with the engine
 * killed (SIGKILL) in the middle of its first act. The twin is liquidated in
 * the fast drop and the slide, so these tests can fail.
 *
 * Every path runs on the SQLite pass (the runner's own store); the store's
 * part (three engines, the crash) runs again on PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { play, protectedHeld } from "../helpers/scenarios";
import { TEST_STORE } from "../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("every price path at the ceiling (60%) and at 50%", () => {
  // the slide (1,800 blocks, the longest) runs in protection-slide.test.ts, beside this file
  for (const p of ["fast-drop", "wick", "random-7", "random-42"]) {
    for (const ltv of [60, 50]) {
      it(`${p} from ${ltv}% LTV: no liquidation with protection${p === "fast-drop" ? "; the unprotected twin is liquidated" : ""}`, async () => {
        const r = await play({ path: p, startLtvPct: ltv, engines: 1 });
        protectedHeld(r);
        if (p === "fast-drop") {
          expect(r.baseline.liquidations).toBeGreaterThanOrEqual(1);
          expect(r.baseline.lowest_health).toBeLessThan(1);
          expect(r.baseline.liquidation_bonus_lost_usd).toBeGreaterThan(0);
          expect(r.equity_kept_vs_baseline_usd).toBeGreaterThan(0);
        }
      }, 300_000);
    }
  }
});

describe("the fast drop with the store's part of exactly once", () => {
  it("three engines at once: still one deleverage per trigger, no liquidation", async () => {
    const r = await play({ path: "fast-drop", startLtvPct: 60, engines: 3 });
    protectedHeld(r);
    expect(r.baseline.liquidations).toBeGreaterThanOrEqual(1);
  }, 300_000);

  it("the engine killed (SIGKILL) with its signed deleverage pending, then restarted: recorded once, sold once, no liquidation", async () => {
    const r = await play({ path: "fast-drop", startLtvPct: 60, crash: true });
    expect(r.crash).toBeDefined();
    // killed with the signed bytes on its claim: sent already (pending in the held-back block) or not yet; either
    // way the successor re-sends those bytes (at most once on chain) and records what landed
    expect(r.crash!.signed_transactions_on_the_claim).toBe(1);
    // the successor starts (a new process) and takes the dead engine's claim over after its lease (1.5 s here):
    // until it re-sends the signed bytes the position waits under the trigger, at most a minute of blocks
    protectedHeld(r, 30);
    expect(r.protected.deleverages).toBe(1);
  }, 300_000);
});
