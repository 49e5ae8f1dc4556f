/**
 * What the protection scenario tests share (bench/protection/runner.ts): a scenario on the test's store, and
 * what protection must hold in every one of them.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { runScenario } from "../../bench/protection/runner";
import type { ScenarioOptions, ScenarioResult } from "../../bench/protection/scenario";
import { freshDatabase, TEST_STORE } from "./store";

export async function play(o: ScenarioOptions): Promise<ScenarioResult> {
  const database = TEST_STORE === "postgres" ? await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "scenario-db-"))) : undefined;
  return runScenario({ ...o, ...(database ? { database } : {}) });
}

/**
 * What protection must hold. `blocksUnderTrigger`: how long the health factor may stay under the trigger after
 * crossing it: the block that crossed it when an engine takes its pass every block; longer when the engine died
 * in its act and its successor had to start and take the claim over.
 */
export function protectedHeld(r: ScenarioResult, blocksUnderTrigger = 1) {
  const what = JSON.stringify({ ...r, series: undefined });
  expect(r.protected.liquidations, what).toBe(0);
  expect(r.protected.lowest_health, what).toBeGreaterThan(1);
  // the engine passes every block: the block that crosses the trigger is the only one under it
  expect(r.protected.max_blocks_under_trigger, what).toBeLessThanOrEqual(blocksUnderTrigger);
  if (blocksUnderTrigger === 1) expect(r.protected.blocks_trigger_to_act, what).toBe(0);
  // one deleverage per trigger: each on chain is one recorded action, none twice
  expect(r.protected.deleverages, what).toBeGreaterThanOrEqual(1);
  expect(r.protected.deleverages, what).toBe(r.protected.recorded_actions);
  expect(r.protected.recorded_actions, what).toBe(r.protected.triggers);
  // what it cost: the swap within 1% of the oracle's value of what was sold, gas well inside the caps
  expect(r.protected.gas_usd, what).toBeLessThan(0.25 * r.protected.deleverages);
}
