/**
 * The ProtectionModule's Foundry tests (contracts-abi/test) inside `npm test`:
 * forge runs them on a fork of the offline Base fixture (the real Aave V3 Pool,
 * oracle, Uniswap V3 and Safe 1.4.1), fuzzed amounts included. They do not
 * touch the store, so they run once, in the SQLite pass.
 */
import { describe, expect, it } from "vitest";
import { runForgeTests } from "../../scripts/forge-test";
import { TEST_STORE } from "../helpers/store";

describe.skipIf(TEST_STORE === "postgres")("the ProtectionModule's Foundry tests", () => {
  it("every escape attempt and every bound, fuzzed, passes forge test on the fork", async () => {
    const { status, output } = await runForgeTests();
    expect(status, output).toBe(0);
    const summary = /(\d+) tests passed, (\d+) failed/.exec(output);
    expect(summary, output).not.toBeNull();
    expect(Number(summary![1])).toBeGreaterThanOrEqual(18);
    expect(Number(summary![2])).toBe(0);
    // each escape the module must refuse has its test
    for (const name of [
      "swapToAnotherRecipient",
      "approvalToAnotherSpender",
      "repaySomeoneElsesDebt",
      "reentrantToken",
      "flashCallbackFromOutside",
      "testFuzz_worsePriceThanOracleReverts",
      "testFuzz_deleverageKeepsItsBounds",
    ]) {
      expect(output).toMatch(new RegExp(`\\[PASS\\] \\w*${name}`));
    }
  }, 180_000);
});
