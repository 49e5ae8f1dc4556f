/** Aave 3.6's arithmetic: the rounding variants, TokenMath's direction per operation, interest and the account. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  accountData,
  aTokenBalance,
  aTokenBurnScaled,
  aTokenMintScaled,
  borrowAllowed,
  compoundedInterest,
  linearInterest,
  MAX_UINT256,
  mulDivCeil,
  normalizedDebt,
  normalizedIncome,
  percentDivCeil,
  percentMulFloor,
  RAY,
  rayDivCeil,
  rayDivFloor,
  rayMul,
  rayMulCeil,
  rayMulFloor,
  SECONDS_PER_YEAR,
  vTokenBalance,
  vTokenMintScaled,
  WAD,
  wadDiv,
  withdrawAllowed,
  type AccountReserve,
} from "./aave-math";

const INDEX = 1_000_000_000_123_456_789_012_345_678n; // 1.000000000123... ray: no amount is an exact multiple

describe("WadRayMath and PercentageMath rounding", () => {
  it("floor, half up and ceiling on the same product", () => {
    expect([rayMulFloor(3n, RAY / 2n), rayMul(3n, RAY / 2n), rayMulCeil(3n, RAY / 2n)]).toEqual([1n, 2n, 2n]);
    expect([rayMulFloor(5n, RAY / 4n), rayMul(5n, RAY / 4n), rayMulCeil(5n, RAY / 4n)]).toEqual([1n, 1n, 2n]);
    expect([rayMulFloor(4n, RAY / 2n), rayMulCeil(4n, RAY / 2n)]).toEqual([2n, 2n]); // exact: no rounding
    expect([rayDivFloor(1n, 3n * RAY), rayDivCeil(1n, 3n * RAY)]).toEqual([0n, 1n]);
    expect([mulDivCeil(10n, 3n, 4n), mulDivCeil(8n, 3n, 4n)]).toEqual([8n, 6n]);
    expect([percentMulFloor(9_999n, 5_000n), percentDivCeil(6_001n, 6_000n), percentDivCeil(6_000n, 6_000n)]).toEqual([4_999n, 10_002n, 10_000n]);
  });

  it("supply mints down and reads back at most what was supplied; a borrow mints up and owes at least what was borrowed", () => {
    // 1,000 USDC supplied at an index that is not a multiple: the aToken balance reads 999.999999
    const scaled = aTokenMintScaled(1_000_000_000n, INDEX);
    expect(aTokenBalance(scaled, INDEX)).toBe(999_999_999n);
    const debt = vTokenMintScaled(1_000_000_000n, INDEX);
    expect(vTokenBalance(debt, INDEX)).toBe(1_000_000_001n);
    fc.assert(
      fc.property(fc.bigInt(1n, 10n ** 30n), fc.bigInt(RAY, 5n * RAY), (amount, index) => {
        expect(aTokenBalance(aTokenMintScaled(amount, index), index)).toBeLessThanOrEqual(amount);
        expect(aTokenBalance(aTokenMintScaled(amount, index), index)).toBeGreaterThanOrEqual(amount - index / RAY - 1n);
        expect(vTokenBalance(vTokenMintScaled(amount, index), index)).toBeGreaterThanOrEqual(amount);
        // a withdrawal burns at least its amount's worth
        expect(rayMulFloor(aTokenBurnScaled(amount, index), index)).toBeGreaterThanOrEqual(amount - 1n);
        expect(aTokenBurnScaled(amount, index)).toBeGreaterThanOrEqual(aTokenMintScaled(amount, index));
      }),
      { numRuns: 500 },
    );
  });
});

describe("interest (MathUtils, ReserveLogic)", () => {
  it("a year at 10%: linear 1.1, compounded the third-order expansion of e^0.1", () => {
    const rate = RAY / 10n;
    expect(linearInterest(rate, SECONDS_PER_YEAR)).toBe((RAY * 11n) / 10n);
    // 1 + x + x^2/2 + x^3/6 with x = 0.1, each product rounded half up
    expect(compoundedInterest(rate, SECONDS_PER_YEAR)).toBe(1_105_166_666_666_666_666_666_666_667n);
    expect(compoundedInterest(rate, 0n)).toBe(RAY);
  });

  it("the stored index in the block of the update, accrued on it afterwards", () => {
    const r = {
      liquidityIndex: INDEX,
      variableBorrowIndex: 2n * RAY,
      currentLiquidityRate: RAY / 20n,
      currentVariableBorrowRate: RAY / 10n,
      lastUpdateTimestamp: 1_000n,
    };
    expect([normalizedIncome(r, 1_000n), normalizedDebt(r, 1_000n)]).toEqual([INDEX, 2n * RAY]);
    expect(normalizedIncome(r, 1_000n + SECONDS_PER_YEAR)).toBe(rayMul((RAY * 105n) / 100n, INDEX));
    expect(normalizedDebt(r, 1_000n + SECONDS_PER_YEAR)).toBe(2n * 1_105_166_666_666_666_666_666_666_667n);
  });
});

describe("calculateUserAccountData", () => {
  const reserve = (over: Partial<AccountReserve>): AccountReserve => ({
    scaledCollateral: 0n,
    scaledDebt: 0n,
    liquidityIndex: RAY,
    debtIndex: RAY,
    price: 100_000_000n,
    decimals: 6,
    ltvBps: 7_500n,
    liquidationThresholdBps: 7_800n,
    ...over,
  });
  const weth = (scaled: bigint) =>
    reserve({ scaledCollateral: scaled, price: 300_000_000_000n, decimals: 18, ltvBps: 8_000n, liquidationThresholdBps: 8_250n });
  const btc = (scaled: bigint) =>
    reserve({ scaledCollateral: scaled, price: 9_000_000_000_000n, decimals: 8, ltvBps: 7_300n, liquidationThresholdBps: 7_800n });

  it("collateral floored, debt ceiled, averages floored, HF from the weighted sum", () => {
    // 1 WETH (3,000 USD) and 0.001 cbBTC (90 USD); debt 1,000.000001 USDC at an index of 1.5: 1,500.0000015 -> 1,500.000002 USDC
    const a = accountData([weth(10n ** 18n), btc(100_000n), reserve({ scaledDebt: 1_000_000_001n, debtIndex: (RAY * 3n) / 2n })]);
    expect(a.totalCollateralBase).toBe(309_000_000_000n);
    expect(a.totalDebtBase).toBe(150_000_000_200n);
    expect(a.ltvBps).toBe((300_000_000_000n * 8_000n + 9_000_000_000n * 7_300n) / 309_000_000_000n); // 7,979.6: 7,979
    expect(a.liquidationThresholdBps).toBe(8_236n); // 8,236.9
    expect(a.healthFactorWad).toBe(((300_000_000_000n * 8_250n + 9_000_000_000n * 7_800n) * WAD + 75_000_000_100n) / 150_000_000_200n / 10_000n);
    expect(accountData([weth(10n ** 18n)]).healthFactorWad).toBe(MAX_UINT256);
    expect(accountData([weth(10n ** 18n), reserve({ scaledCollateral: 5n, ltvBps: 0n })]).hasZeroLtvCollateral).toBe(true);
    // a zero-LTV reserve with nothing supplied is not collateral; nor is a plain one
    expect(accountData([weth(10n ** 18n), reserve({ scaledCollateral: 0n, ltvBps: 0n })]).hasZeroLtvCollateral).toBe(false);
    expect(accountData([weth(10n ** 18n)]).hasZeroLtvCollateral).toBe(false);
  });

  it("wadDiv rounds half up, on the divisor's half", () => {
    expect([wadDiv(1n, 3n), wadDiv(2n, 3n), wadDiv(1n, 2n)]).toEqual([333_333_333_333_333_333n, 666_666_666_666_666_667n, 500_000_000_000_000_000n]);
  });

  it("a borrow passes at exactly the LTV and not a base unit over; a withdraw at a health factor of exactly 1", () => {
    // 1,000 USD of collateral at LTV 75%: 750 USD of debt is allowed, 750.00000001 is not
    const at = (debtBase: bigint) => accountData([reserve({ scaledCollateral: 1_000_000_000n }), reserve({ scaledDebt: debtBase, price: 1n, decimals: 0 })]);
    expect(borrowAllowed(at(75_000_000_000n))).toBe(true);
    expect(borrowAllowed({ ...at(75_000_000_000n), totalDebtBase: 75_000_000_001n })).toBe(false);
    // each condition of the borrow's check on its own: an LTV of 0, a health factor a wei under 1
    expect(borrowAllowed({ ...at(75_000_000_000n), ltvBps: 0n })).toBe(false);
    expect(borrowAllowed({ ...at(1n), healthFactorWad: WAD })).toBe(true);
    expect(borrowAllowed({ ...at(1n), healthFactorWad: WAD - 1n })).toBe(false);
    expect(withdrawAllowed({ ...at(78_000_000_000n) })).toBe(true);
    expect(withdrawAllowed({ ...at(78_000_000_100n) })).toBe(false);
  });
});
