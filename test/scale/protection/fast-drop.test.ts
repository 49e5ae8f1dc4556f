/**
 * The fast drop (-40% in five minutes, then flat for a minute) from the ceiling (60%) and from 50% LTV, on SQLite
 * (README.md beside this file says what every scenario proves).
 */
import { describe, expect, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";
import { TEST_STORE } from "../../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("the fast drop", () => {
  for (const ltv of [60, 50]) {
    it(`fast-drop from ${ltv}% LTV: no liquidation with protection; the unprotected twin is liquidated`, async () => {
      const r = await play({ path: "fast-drop", startLtvPct: ltv, engines: 1 });
      protectedHeld(r);
      expect(r.baseline.liquidations).toBeGreaterThanOrEqual(1);
      expect(r.baseline.lowest_health).toBeLessThan(1);
      expect(r.baseline.liquidation_bonus_lost_usd).toBeGreaterThan(0);
      expect(r.equity_kept_vs_baseline_usd).toBeGreaterThan(0);
    }, 300_000);
  }
});
