import { describe, expect, it } from "vitest";
import { chooseDeleverage, deleverageCall, valueMicro, type DeleverageInput } from "./deleverage";

const E18 = 10n ** 18n;
/** 10 WETH (and optionally cbBTC) supplied, `debt` USDC borrowed, ETH at `eth` USD */
function position(eth: number, debt: bigint, btc = 0n): DeleverageInput {
  const ethBase = BigInt(eth) * 100_000_000n;
  const btcBase = 60_000n * 100_000_000n;
  const ethValue = 10n * ethBase;
  const btcValue = (btc * btcBase) / 100_000_000n;
  const collateralBase = ethValue + btcValue;
  return {
    collateralBase,
    debtBase: debt * 100n,
    liquidationThresholdBps: collateralBase === 0n ? 0n : (ethValue * 8250n + btcValue * 7800n) / collateralBase,
    debtUsdc: debt,
    usdcPriceBase: 100_000_000n,
    collateral: { ETH: { supplied: 10n * E18, priceBase: ethBase, ltBps: 8250n }, BTC: { supplied: btc, priceBase: btcBase, ltBps: btc > 0n ? 7800n : 0n } },
    parkTargetBps: 2500n,
    maxSlippageBps: 100n,
    flashPremiumBps: 5n,
  };
}

/** Aave's health factor x 10,000 after withdrawing `amount` of ETH with `repaid` USDC repaid first */
const hfAfter = (p: DeleverageInput, amount: bigint, repaid: bigint) => {
  const value = valueMicro(p, "ETH", amount) * 100n;
  return (p.collateralBase * p.liquidationThresholdBps - value * 8250n) / (p.debtBase - repaid * 100n);
};

describe("deleverage from collateral: which, how much, minimum out, flash", () => {
  it("at 50% LTV sells the ETH that parks the position at 25%, withdrawing first, at the oracle's value less 1%", () => {
    const p = position(3_000, 15_000_000_000n);
    const choice = chooseDeleverage(p)!;
    expect(choice).toMatchObject({ asset: "ETH", reachesPark: true });
    // (15,000 - 0.25 x 30,000) / 0.75 = 10,000 USD = 3.333 ETH, a little less for the module's margin
    expect(choice.amount).toBeLessThan(3_333_333_333_333_333_334n);
    expect(choice.amount).toBeGreaterThan(3_333_000_000_000_000_000n);
    const call = deleverageCall(p, choice.asset, choice.amount)!;
    expect(call.flashAmount).toBe(0n);
    expect(call.minOut).toBe((((choice.amount * 3_000n * 1_000_000n) / E18) * 9_900n) / 10_000n);
    // the park line after a sale at the oracle: (D - x) / (C - x) just above 25%
    const x = call.valueMicro * 100n;
    const ltv = ((p.debtBase - x) * 10_000n) / (p.collateralBase - x);
    expect(ltv).toBe(2500n);
  });

  it("at a health factor of 1.02 withdrawing first would break Aave's check: flash liquidity repays first, what the sale surely returns", () => {
    const p = position(1_855, 15_000_000_000n);
    const choice = chooseDeleverage(p)!;
    const call = deleverageCall(p, "ETH", 3n * E18)!;
    expect(choice.asset).toBe("ETH");
    expect(hfAfter(p, 3n * E18, 0n)).toBeLessThan(10_000n);
    expect(call.flashAmount).toBeGreaterThan(0n);
    // exactly the most the minimum out repays with the premium
    expect(call.flashAmount).toBe((call.minOut * 10_000n) / 10_005n - 1n);
    // the loan and its premium are covered by the least the module accepts
    expect(call.flashAmount + (call.flashAmount * 5n) / 10_000n).toBeLessThanOrEqual(call.minOut);
    expect(hfAfter(p, 3n * E18, call.flashAmount)).toBeGreaterThanOrEqual(10_100n);
  });

  it("the lowest liquidation threshold first (cbBTC before WETH), and partial when its supply is short of the target", () => {
    const p = position(3_000, 20_000_000_000n, 1_000_000n); // 0.01 cbBTC ($600)
    const choice = chooseDeleverage(p)!;
    expect(choice).toEqual({ asset: "BTC", amount: 1_000_000n, reachesPark: false });
  });

  it("nothing to do at or under the park target, with no collateral, or with a supply that is not collateral", () => {
    expect(chooseDeleverage(position(3_000, 7_000_000_000n))).toBeNull();
    const p = position(3_000, 15_000_000_000n);
    expect(chooseDeleverage({ ...p, collateral: { ETH: { ...p.collateral.ETH, ltBps: 0n }, BTC: p.collateral.BTC } })).toBeNull();
    expect(chooseDeleverage({ ...p, collateral: { ETH: { ...p.collateral.ETH, supplied: 0n }, BTC: p.collateral.BTC } })).toBeNull();
    expect(deleverageCall(p, "ETH", 0n)).toBeNull();
  });

  it("a flash loan that cannot free the collateral is refused rather than sent (a position under water)", () => {
    const p = position(1_500, 15_000_000_000n); // HF 0.825: Aave would liquidate; no sale lets it withdraw
    expect(deleverageCall(p, "ETH", 5n * E18)).toBeNull();
  });

  it("over many positions: a flash loan is always repaid by the minimum out, and withdrawing first keeps the health factor at 1.01", () => {
    for (let eth = 1_840; eth <= 3_600; eth += 37) {
      for (const debt of [9_000_000_000n, 12_000_000_000n, 15_000_000_000n]) {
        const p = position(eth, debt);
        const choice = chooseDeleverage(p);
        if (!choice) continue;
        for (const amount of [choice.amount, choice.amount / 2n, choice.amount / 7n]) {
          const call = deleverageCall(p, choice.asset, amount);
          if (!call) continue;
          expect(call.flashAmount + (call.flashAmount * 5n) / 10_000n).toBeLessThanOrEqual(call.minOut);
          expect(call.flashAmount).toBeLessThanOrEqual(p.debtUsdc);
          expect(hfAfter(p, amount, call.flashAmount)).toBeGreaterThanOrEqual(10_100n);
        }
      }
    }
  });

  it("between collaterals of one threshold, the larger supply first; a collateral without a price is never chosen", () => {
    const p = position(3_000, 40_000_000_000n, 100_000_000n); // 1 cbBTC ($60,000) beside 10 WETH ($30,000), 40,000 USDC borrowed
    const same = { ...p, collateral: { ETH: { ...p.collateral.ETH, ltBps: 7800n }, BTC: p.collateral.BTC } };
    expect(chooseDeleverage(same)!.asset).toBe("BTC");
    const smallBtc = { ...same, collateral: { ...same.collateral, BTC: { ...same.collateral.BTC, supplied: 10_000_000n } } }; // 0.1 cbBTC ($6,000)
    expect(chooseDeleverage(smallBtc)!.asset).toBe("ETH");
    const unpriced = { ...p, collateral: { ETH: { ...p.collateral.ETH, priceBase: 0n }, BTC: { ...p.collateral.BTC, supplied: 0n } } };
    expect(chooseDeleverage(unpriced)).toBeNull();
  });

  it("a supply exactly the size of the sale reaches the park target; one unit less is partial", () => {
    const p = position(3_000, 15_000_000_000n);
    const wanted = chooseDeleverage(p)!.amount;
    const exact = { ...p, collateral: { ...p.collateral, ETH: { ...p.collateral.ETH, supplied: wanted } } };
    expect(chooseDeleverage(exact)).toEqual({ asset: "ETH", amount: wanted, reachesPark: true });
    const short = { ...p, collateral: { ...p.collateral, ETH: { ...p.collateral.ETH, supplied: wanted - 1n } } };
    expect(chooseDeleverage(short)).toEqual({ asset: "ETH", amount: wanted - 1n, reachesPark: false });
  });

  it("the flash loan is at most the debt; a loan that repays all of it always lets Aave release the collateral", () => {
    // a small debt against a sale worth more than it: the loan is the whole debt
    const p = position(1_700, 13_000_000_000n);
    const call = deleverageCall(p, "ETH", 9n * E18)!;
    expect(call.flashAmount).toBe(p.debtUsdc);
  });

  it("no price for USDC, or nothing to sell: no call", () => {
    const p = position(3_000, 15_000_000_000n);
    expect(deleverageCall({ ...p, usdcPriceBase: 0n }, "ETH", E18)).toBeNull();
    expect(deleverageCall(p, "ETH", 1n)).toBeNull(); // 1 wei of ETH is worth no USDC unit
  });
});
