/**
 * The fast drop from the ceiling with the engine killed (SIGKILL) in the middle of its first act, then
 * restarted, on both stores (the store's part of exactly once; README.md beside this file says what every
 * scenario proves).
 */
import { describe, expect, it } from "vitest";
import { play, protectedHeld } from "../../helpers/scenarios";

describe("the fast drop with the store's part of exactly once", () => {
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
