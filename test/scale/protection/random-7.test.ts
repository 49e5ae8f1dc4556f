/**
 * The seeded random walk with jumps of seed 7 (ten minutes) from the ceiling (60%) and from 50% LTV, on SQLite
 * (README.md beside this file says what every scenario proves).
 */
import { describe, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";
import { TEST_STORE } from "../../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("the random walk of seed 7", () => {
  for (const ltv of [60, 50]) {
    it(`random-7 from ${ltv}% LTV: no liquidation with protection`, async () => {
      const r = await play({ path: "random-7", startLtvPct: ltv, engines: 1 });
      protectedHeld(r);
    }, 300_000);
  }
});
