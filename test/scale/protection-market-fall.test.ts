/**
 * A market-wide fall (the scale bench's fall, bench/protection/scale/fall.ts): 50 managed Safes
 * cross their trigger in the same block (ETH 3,000 -> 2,500 USD, the feed and the pool together), beside
 * healthy ones; automine off, one block mined at a time after the engine's pass. Every crossing Safe must be
 * deleveraged within 2 blocks of the fall, once, and none liquidated when a second drop (1,950 USD) takes
 * any Safe left at its position under 1, with a liquidator beside calling Aave's liquidationCall.
 * An engine whose pass awaits each act's receipt deleverages about one Safe a block, and fails this.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareFall, populate, runFall, type Population } from "../../bench/protection/scale/fall";
import { startWorld, type World } from "../../bench/protection/scale/world";
import type { ForkClient } from "../../bench/protection/fork-client";
import { freshDatabase } from "../helpers/store";

const CROSSING = 50;
/** the crossing Safes, a real healthy one (the clones' template) and 9 clones */
const WATCHED = 60;

let world: World;
let pop: Population;
let liquidator: ForkClient;
let dataDir: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "market-fall-"));
  world = await startWorld({ dataDir, database: await freshDatabase(dataDir) });
  pop = await populate(world, WATCHED, CROSSING, 8);
  liquidator = await prepareFall(world);
}, 180_000);
afterAll(async () => {
  await world?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe("a market-wide fall: 50 Safes cross their trigger in the same block", () => {
  it("every one is deleveraged within 2 blocks, once, and none is liquidated", async () => {
    const r = await runFall(world, pop, liquidator, { engines: 1, database: world.database, blocks: 6, secondDropAfter: 3 });
    expect(r.crossing).toBe(CROSSING);
    // the store's actions on the crossing Safes (status and reason, counted) say why when it fails
    expect(
      {
        deleveraged: r.deleveraged,
        within_2_blocks: r.within_2_blocks,
        liquidated: r.liquidated_safes,
        acts_per_trigger_max: r.acts_per_trigger_max,
      },
      JSON.stringify(r.action_outcomes),
    ).toEqual({
      deleveraged: CROSSING,
      within_2_blocks: CROSSING,
      liquidated: 0,
      acts_per_trigger_max: 1,
    });
    expect(r.recorded_actions).toBe(CROSSING);
  }, 240_000);
});
