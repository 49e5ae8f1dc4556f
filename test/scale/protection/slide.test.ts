/**
 * The slide (-50% over an hour, 1,800 blocks of 2 s) from the ceiling (60%) and from 50% LTV, on SQLite: the
 * longest scenario (README.md beside this file says what every scenario proves). The unprotected twin is
 * liquidated, so the test can fail.
 */
import { describe, expect, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";
import { TEST_STORE } from "../../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("the slide", () => {
  for (const ltv of [60, 50]) {
    it(`slide from ${ltv}% LTV: no liquidation with protection; the unprotected twin is liquidated`, async () => {
      const r = await play({ path: "slide", startLtvPct: ltv, engines: 1 });
      protectedHeld(r);
      expect(r.baseline.liquidations).toBeGreaterThanOrEqual(1);
      expect(r.baseline.lowest_health).toBeLessThan(1);
      expect(r.equity_kept_vs_baseline_usd).toBeGreaterThan(0);
    }, 300_000);
  }
});
