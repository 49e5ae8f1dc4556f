/**
 * Reverts in words and Aave's refusals typed, on revert data as 3.6 encodes it (its custom errors), a string
 * revert and a panic as Solidity encodes them, and viem's own error chain of a reverted eth_call.
 */
import { CallExecutionError, encodeAbiParameters, encodeErrorResult, encodeFunctionData, RawContractError, toFunctionSelector, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { AAVE_ERRORS_ABI, type AaveErrorName } from "../contracts/aave-errors";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { aaveErrorOf, aaveRefusalOf, describeRevert, describeRevertData, revertDataOf, revertError } from "./revert";

const aave = (name: AaveErrorName, args?: readonly unknown[]) => encodeErrorResult({ abi: AAVE_ERRORS_ABI, errorName: name, args } as never);
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const WALLET = "0x00000000000000000000000000000000000000aa";
const borrow = encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [USDC, 1n, 2n, 0, WALLET] });
const withdraw = encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [USDC, 1n, WALLET] });
/** viem's error of an eth_call that reverted with `data` */
const reverted = (data: Hex) => new CallExecutionError(new RawContractError({ data }), { account: undefined, to: USDC, data: "0x" } as never);

describe("revert data in words", () => {
  it("names Aave's errors, with their arguments", () => {
    expect(aave("HealthFactorLowerThanLiquidationThreshold")).toBe("0x6679996d");
    expect(describeRevertData(aave("HealthFactorLowerThanLiquidationThreshold"))).toBe("HealthFactorLowerThanLiquidationThreshold()");
    expect(describeRevertData(aave("InvalidCollateralInEmode", [USDC, 1n]))).toBe(`InvalidCollateralInEmode(${USDC}, 1)`);
    expect(aaveErrorOf(aave("MustNotLeaveDust"))).toEqual({ name: "MustNotLeaveDust", args: [] });
  });

  it("a string revert is its message, a panic its code, another custom error its selector, no data says so", () => {
    const error = toFunctionSelector("Error(string)") + encodeAbiParameters([{ type: "string" }], ["Too little received"]).slice(2);
    const panic = toFunctionSelector("Panic(uint256)") + encodeAbiParameters([{ type: "uint256" }], [17n]).slice(2);
    const other = toFunctionSelector("InsufficientBalance()");
    expect([describeRevertData(error as Hex), describeRevertData(panic as Hex), describeRevertData(other), describeRevertData("0x")]).toEqual([
      "Too little received",
      "Panic(0x11)",
      `custom error ${other}`,
      "reverted without a reason",
    ]);
    expect([aaveErrorOf(error as Hex), aaveErrorOf(other), aaveErrorOf(undefined)]).toEqual([undefined, undefined, undefined]);
  });

  it("reads the data out of viem's error of an eth_call", () => {
    const err = reverted(aave("CollateralCannotCoverNewBorrow"));
    expect(revertDataOf(err)).toBe(aave("CollateralCannotCoverNewBorrow"));
    expect(describeRevert(err)).toBe("CollateralCannotCoverNewBorrow()");
    expect(describeRevert(new Error("first line\nsecond"))).toBe("first line");
  });
});

describe("Aave's refusals typed", () => {
  it("every Aave error of a Pool borrow is a refused borrow", () => {
    for (const name of ["CollateralCannotCoverNewBorrow", "HealthFactorLowerThanLiquidationThreshold", "BorrowCapExceeded", "LtvValidationFailed"] as const) {
      expect(aaveRefusalOf(aave(name), borrow), name).toMatchObject({ code: "borrow_refused", aaveError: name });
    }
  });

  it("a health factor under 1 on a withdraw, or on a call not known as a borrow, would leave the position liquidatable", () => {
    expect(aaveRefusalOf(aave("HealthFactorLowerThanLiquidationThreshold"), withdraw)).toMatchObject({ code: "would_be_liquidatable" });
    expect(aaveRefusalOf(aave("HealthFactorLowerThanLiquidationThreshold"))).toMatchObject({ code: "would_be_liquidatable" });
    // an error only a borrow's validation throws is a refused borrow whatever call reached it (a Safe's batch)
    expect(aaveRefusalOf(aave("BorrowCapExceeded"), "0x6a761202")).toMatchObject({ code: "borrow_refused" });
  });

  it("other reverts are not typed: the generic code, the reason and Aave's error named", () => {
    expect(aaveRefusalOf(aave("NotEnoughAvailableUserBalance"), withdraw)).toBeUndefined();
    expect(aaveRefusalOf(aave("MustNotLeaveDust"))).toBeUndefined();
    const dust = revertError(reverted(aave("MustNotLeaveDust")), undefined, "transaction_would_revert", "the call would revert");
    expect([dust.code, dust.fields]).toEqual(["transaction_would_revert", { revert_reason: "MustNotLeaveDust()", aave_error: "MustNotLeaveDust" }]);
    expect(dust.shortMessage).toMatch(/^the call would revert: MustNotLeaveDust\(\) \(a liquidation may not leave collateral or debt under MIN_LEFTOVER_BASE/);
    const refused = revertError(
      reverted(aave("CollateralCannotCoverNewBorrow")),
      borrow,
      "transaction_would_revert",
      "the signed transaction would revert on base",
    );
    expect([refused.code, refused.fields, refused.shortMessage]).toEqual([
      "borrow_refused",
      { revert_reason: "CollateralCannotCoverNewBorrow()", aave_error: "CollateralCannotCoverNewBorrow" },
      "the signed transaction would revert on base: Aave refuses it, the collateral cannot cover the new debt at the position's LTV (CollateralCannotCoverNewBorrow)",
    ]);
  });
});
