/**
 * The wick (-35% in one minute and back within the next) from the ceiling (60%) and from 50% LTV, on SQLite
 * (README.md beside this file says what every scenario proves).
 */
import { describe, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";
import { TEST_STORE } from "../../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("the wick", () => {
  for (const ltv of [60, 50]) {
    it(`wick from ${ltv}% LTV: no liquidation with protection`, async () => {
      const r = await play({ path: "wick", startLtvPct: ltv, engines: 1 });
      protectedHeld(r);
    }, 300_000);
  }
});
