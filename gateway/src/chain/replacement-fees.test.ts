import { describe, expect, it } from "vitest";
import { replacementFees } from "./replacement-fees";

describe("replacementFees", () => {
  it("raises both fees by at least 12.5% (rounded up, at least one wei)", () => {
    expect(replacementFees({ maxFeePerGas: 1_000n, maxPriorityFeePerGas: 100n }, 0n)).toEqual({ maxFeePerGas: 1_125n, maxPriorityFeePerGas: 113n });
    expect(replacementFees({ maxFeePerGas: 1n, maxPriorityFeePerGas: 0n }, 0n)).toEqual({ maxFeePerGas: 2n, maxPriorityFeePerGas: 1n });
  });

  it("pays at least twice the current base fee plus the tip", () => {
    const f = replacementFees({ maxFeePerGas: 1_000n, maxPriorityFeePerGas: 100n }, 10_000n);
    expect(f).toEqual({ maxFeePerGas: 20_113n, maxPriorityFeePerGas: 113n });
  });
});
