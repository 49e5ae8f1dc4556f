/**
 * The fast drop from the ceiling with three engines of one key at once, on both stores (the store's part of
 * exactly once; README.md beside this file says what every scenario proves).
 */
import { describe, expect, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";

describe("the fast drop with the store's part of exactly once", () => {
  it("three engines at once: still one deleverage per trigger, no liquidation", async () => {
    const r = await play({ path: "fast-drop", startLtvPct: 60, engines: 3 });
    protectedHeld(r);
    expect(r.baseline.liquidations).toBeGreaterThanOrEqual(1);
  }, 300_000);
});
