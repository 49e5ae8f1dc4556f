/** Assets, presets, holdings and the sandbox ledger: exact figures. */
import { describe, expect, it } from "vitest";
import { ASSETS, REFERENCE_LIQUIDATION_THRESHOLD_BPS, SUPPORTED_ASSETS, sandboxUnitsFor, sandboxValueMicro } from "./assets";
import { DEMO_HOLDINGS, EMPTY_HOLDINGS, portfolioFigures, positionOf } from "./portfolio";
import { ceilingBps, DEFAULT_PRESET, policyOf, PRESET_NAMES, PRESETS } from "./presets";
import { LedgerError } from "./sandbox-ledger";
import { declarationOf } from "../actions";

describe("assets and presets", () => {
  it("values and buys at the sandbox prices, rounding down", () => {
    expect(SUPPORTED_ASSETS).toEqual(["BTC", "ETH", "USDC"]);
    expect(REFERENCE_LIQUIDATION_THRESHOLD_BPS).toBe(8050);
    expect(sandboxValueMicro("BTC", 50_000_000n)).toBe(30_000_000_000n);
    expect(sandboxValueMicro("ETH", 10n ** 18n)).toBe(3_000_000_000n);
    expect(sandboxValueMicro("USDC", 5_000_000n)).toBe(5_000_000n);
    expect(sandboxUnitsFor("BTC", 60_000_000_000n)).toBe(100_000_000n);
    expect(sandboxUnitsFor("ETH", 1_500_000_000n)).toBe(5n * 10n ** 17n);
    expect(sandboxUnitsFor("BTC", 599n)).toBe(0n);
    expect(ASSETS.BTC).toEqual({ symbol: "BTC", decimals: 8, maxLtvBps: 7300, liquidationThresholdBps: 7800, sandboxPriceMicro: 60_000_000_000n });
  });

  it("presets: bands, ceilings, park targets, thresholds; the policy object and the ceiling in bps", () => {
    expect(PRESET_NAMES).toEqual(["conservative", "balanced", "aggressive"]);
    expect(DEFAULT_PRESET).toBe("balanced");
    expect(PRESETS.balanced).toMatchObject({
      liveBand: { min: 35, max: 50 },
      ceiling: 60,
      parkTarget: 25,
      protectBelowHealthScore: 1.3,
      repayAboveHealthScore: 3,
    });
    expect(PRESETS.conservative).toMatchObject({ liveBand: { min: 20, max: 35 }, ceiling: 45, parkTarget: 15, protectBelowHealthScore: 1.5 });
    expect(PRESETS.aggressive).toMatchObject({ liveBand: { min: 45, max: 60 }, ceiling: 65, parkTarget: 35, protectBelowHealthScore: 1.2 });
    expect(policyOf(PRESETS.balanced)).toEqual({ live_band: { min: 35, max: 50 }, ceiling: 60, park_target: 25 });
    expect(ceilingBps(PRESETS.aggressive)).toBe(6500n);
  });
});

describe("holdings", () => {
  it("the demo portfolio: $60,000 of collateral, 24,000 borrowed, LTV 40%, weighted threshold", () => {
    expect(positionOf(DEMO_HOLDINGS)).toEqual({ collateralMicro: 60_000_000_000n, debtMicro: 24_000_000_000n, liquidationThresholdBps: 8050 });
    expect(portfolioFigures(DEMO_HOLDINGS)).toEqual({
      holdings: { btc: 0.5, eth: 10, usdc: 5000, usdc_supplied: 0 },
      collateral_value_usd: 60000,
      total_value_usd: 65000,
      borrowed_usd: 24000,
      ltv: 40,
      health_score: 2.01,
      liquidation_threshold_pct: 80.5,
    });
  });
  it("an empty position uses the reference threshold; a BTC-only one the BTC threshold", () => {
    expect(positionOf(EMPTY_HOLDINGS)).toEqual({ collateralMicro: 0n, debtMicro: 0n, liquidationThresholdBps: 8050 });
    expect(positionOf({ ...EMPTY_HOLDINGS, btcUnits: 100_000_000n }).liquidationThresholdBps).toBe(7800);
    expect(positionOf({ ...EMPTY_HOLDINGS, btcUnits: 100_000_000n, ethUnits: 10n * 10n ** 18n }).liquidationThresholdBps).toBe(7966); // (60,000 x 7800 + 30,000 x 8300) / 90,000
  });
});

describe("the sandbox ledger", () => {
  const h = { btcUnits: 0n, ethUnits: 0n, usdcMicro: 10_000_000_000n, debtMicro: 1_000_000_000n };
  it("deposit: the fee taken, the net supplied as USDC (collateral at USDC's threshold); the allocation buys nothing", () => {
    const r = declarationOf("deposit").ledger(h, 6_000_000_000n, 120_000_000n, { allocation: { btc: 25, eth: 75 } });
    expect(r.bought).toEqual({});
    expect(r.holdings).toEqual({ ...h, usdcMicro: 4_000_000_000n, suppliedUsdcMicro: 5_880_000_000n });
    expect(r.repaidMicro).toBe(0n);
    expect(positionOf(r.holdings)).toMatchObject({ collateralMicro: 5_880_000_000n, liquidationThresholdBps: 7800 });
    expect(portfolioFigures(r.holdings).holdings).toEqual({ btc: 0, eth: 0, usdc: 4000, usdc_supplied: 5880 });
    expect(() => declarationOf("deposit").ledger(h, 1n, 0n, { allocation: { btc: 50, eth: 49 } })).toThrow("allocation btc and eth must add up to 100");
    const codeOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as LedgerError).code;
      }
    };
    expect(codeOf(() => declarationOf("deposit").ledger(h, 1n, 0n, { allocation: { btc: 50, eth: 49 } }))).toBe("invalid_request");
    expect(codeOf(() => declarationOf("repay").ledger({ ...h, debtMicro: 0n }, 1n, 0n, {}))).toBe("no_debt");
    expect(codeOf(() => declarationOf("repay").ledger({ ...h, usdcMicro: 0n }, 1n, 0n, {}))).toBe("insufficient_balance");
  });
  it("convert: idle USDC out, the bought asset in (fee taken), refused beyond the idle balance", () => {
    const eth = declarationOf("convert").ledger(h, 3_000_000_000n, 60_000_000n, { target: "eth" });
    // the swap's guaranteed output, 1% under the sandbox's price, is what is supplied
    expect(eth.holdings).toEqual({ ...h, usdcMicro: 7_000_000_000n, ethUnits: 9702n * 10n ** 14n });
    expect(eth.bought).toEqual({ ETH: 9702n * 10n ** 14n });
    const btc = declarationOf("convert").ledger(h, 6_000_000_000n, 0n, { target: "btc" });
    expect(btc.holdings.btcUnits).toBe(9_900_000n);
    expect(btc.holdings.ethUnits).toBe(0n);
    const err = (() => {
      try {
        declarationOf("convert").ledger(h, 10_000_000_001n, 0n, { target: "btc" });
      } catch (e) {
        return e as LedgerError;
      }
    })()!;
    expect(err.code).toBe("insufficient_balance");
    expect(err.message).toBe("convert needs 10000.000001 USDC idle; the treasury holds 10000");
    expect(declarationOf("convert").ledger(h, 10_000_000_000n, 0n, { target: "eth" }).holdings.usdcMicro).toBe(0n);
  });
  it("borrow: debt up by the amount, the proceeds less the fee as idle USDC", () => {
    expect(declarationOf("borrow").ledger(h, 1_000_000_000n, 20_000_000n, {}).holdings).toEqual({
      ...h,
      debtMicro: 2_000_000_000n,
      usdcMicro: 10_980_000_000n,
    });
  });
  it("repay: at most the debt, from idle USDC; refused without debt or without the USDC", () => {
    const r = declarationOf("repay").ledger(h, 5_000_000_000n, 0n, {});
    expect(r.repaidMicro).toBe(1_000_000_000n);
    expect(r.holdings).toEqual({ ...h, usdcMicro: 9_000_000_000n, debtMicro: 0n });
    expect(() => declarationOf("repay").ledger({ ...h, debtMicro: 0n }, 1n, 0n, {})).toThrow("the treasury has no debt to repay");
    expect(() => declarationOf("repay").ledger({ ...h, usdcMicro: 999_999_999n }, 1_000_000_000n, 0n, {})).toThrow(
      "repaying 1000 USDC needs that much idle USDC; the treasury holds 999.999999",
    );
    expect(declarationOf("repay").ledger({ ...h, usdcMicro: 1_000_000_000n }, 1_000_000_000n, 0n, {}).holdings.usdcMicro).toBe(0n);
  });
});
