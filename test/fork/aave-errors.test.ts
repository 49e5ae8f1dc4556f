/**
 * The errors the gateway decodes Aave's reverts with (AAVE_ERRORS_ABI) are the ones the fork's Aave throws: the
 * ABI of `Errors.sol` as solc compiles it from @aave-dao/aave-v3-origin (fixtures/aave-origin.ts), error for
 * error, with the same names, parameters and selectors.
 */
import { toFunctionSelector, type AbiParameter } from "viem";
import { formatAbiItem } from "viem/utils";
import { describe, expect, it } from "vitest";
import { AAVE_ERRORS_ABI } from "@treasury/core/contracts/aave-errors";
import { aaveOrigin, AAVE_ORIGIN_VERSION } from "../../fixtures/aave-origin";

type AbiError = { type: "error"; name: string; inputs: readonly AbiParameter[] };

/** an error as its signature and parameter names: what decoding depends on (solc's internalType aside) */
const shape = (e: AbiError) => ({
  name: e.name,
  selector: toFunctionSelector(formatAbiItem(e)),
  inputs: e.inputs.map((p: AbiParameter) => ({ name: p.name, type: p.type })),
});
const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);

describe(`Aave ${AAVE_ORIGIN_VERSION}'s errors`, () => {
  it("AAVE_ERRORS_ABI is the compiled Errors library's ABI", () => {
    const compiled = aaveOrigin("Errors").abi.filter((item): item is AbiError => item.type === "error");
    expect(compiled.length).toBeGreaterThan(0);
    expect(AAVE_ERRORS_ABI.map(shape).sort(byName)).toEqual(compiled.map(shape).sort(byName));
    expect(aaveOrigin("Errors").abi.filter((item) => item.type !== "error")).toEqual([]);
  });

  it("names the errors the gateway maps by the selectors 3.6 reverts with", () => {
    const selector = (name: string) => toFunctionSelector(formatAbiItem(AAVE_ERRORS_ABI.find((e) => e.name === name)!));
    expect(selector("HealthFactorLowerThanLiquidationThreshold")).toBe("0x6679996d");
    expect(selector("CollateralCannotCoverNewBorrow")).toBe(toFunctionSelector("CollateralCannotCoverNewBorrow()"));
  });
});
