/** LTV, health, zones, liquidation distance, actions on a position and the safety rail, at their edges. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  aboveCeiling,
  breachesCeiling,
  HEALTH_SCORE_CAP,
  healthScore,
  liquidationLtvPct,
  LTV_PCT_CAP,
  ltvIncreased,
  ltvPct,
  ltvZonesOf,
  PositionError,
  positionAtLtv,
  priceDropToLiquidationPct,
  safeAmount,
  simulate,
  zoneOf,
  type Position,
} from "./position";
import { ceilingBps, PRESETS, PRESET_NAMES } from "./presets";
import { BPS } from "./money";
import { feeOf, ruleOf, simulateAction } from "../actions";

const pos = (collateralMicro: bigint, debtMicro: bigint, liquidationThresholdBps = 8000): Position => ({ collateralMicro, debtMicro, liquidationThresholdBps });
const none = feeOf("repay", 0n);

describe("figures", () => {
  it("ltvPct: 0 without debt, the cap without collateral, else rounded to 2 decimals and capped", () => {
    expect(ltvPct(pos(0n, 0n))).toBe(0);
    expect(ltvPct(pos(100n, 0n))).toBe(0);
    expect(ltvPct(pos(0n, 1n))).toBe(LTV_PCT_CAP);
    expect(ltvPct(pos(3n, 1n))).toBe(33.33);
    expect(ltvPct(pos(1n, 1_000n))).toBe(LTV_PCT_CAP);
    expect(LTV_PCT_CAP).toBe(999.99);
  });

  it("healthScore: the cap without debt, collateral x threshold / debt rounded down, capped", () => {
    expect(healthScore(pos(1n, 0n))).toBe(HEALTH_SCORE_CAP);
    expect(HEALTH_SCORE_CAP).toBe(100);
    expect(healthScore(pos(30_000n, 15_000n, 8250))).toBe(1.65);
    expect(healthScore(pos(1_000n, 3n, 8000))).toBe(100); // 266.66 capped
    expect(healthScore(pos(10_000n, 6_001n, 8000))).toBe(1.33); // 1.3331 rounded down
  });

  it("liquidation distance: 1 - ltv / threshold, 0 at or past the threshold", () => {
    expect(liquidationLtvPct(8050)).toBe(80.5);
    expect(priceDropToLiquidationPct(40, 8050)).toBe(50.31);
    expect(priceDropToLiquidationPct(80.5, 8050)).toBe(0);
    expect(priceDropToLiquidationPct(90, 8050)).toBe(0);
    expect(priceDropToLiquidationPct(0, 8050)).toBe(100);
  });

  it("zones and their bounds", () => {
    const p = PRESETS.balanced;
    expect(ltvZonesOf(p)).toEqual({ safe: { min: 0, max: 35 }, active: { min: 35, max: 50 }, ceiling: { min: 50, max: 60 }, hard_ceiling: 60 });
    expect([zoneOf(34.99, p), zoneOf(35, p), zoneOf(49.99, p), zoneOf(50, p), zoneOf(60, p), zoneOf(60.01, p)]).toEqual([
      "safe",
      "active",
      "active",
      "ceiling",
      "ceiling",
      "over_ceiling",
    ]);
  });

  it("positionAtLtv restates a debt at an LTV", () => {
    expect(positionAtLtv(60_000_000_000n, 40, 8050)).toEqual({ collateralMicro: 60_000_000_000n, debtMicro: 24_000_000_000n, liquidationThresholdBps: 8050 });
    expect(positionAtLtv(1_000_000n, 12.345, 8000).debtMicro).toBe(123_500n);
  });
});

describe("applyAction", () => {
  const p = pos(10_000n, 4_000n);
  it("deposit and convert add the net amount as collateral; borrow adds debt", () => {
    expect(ruleOf("deposit").effect(p, 1_000n, feeOf("deposit", 1_000n))).toEqual(pos(10_980n, 4_000n));
    expect(ruleOf("convert").effect(p, 1_000n, feeOf("convert", 1_000n))).toEqual(pos(10_980n, 4_000n));
    expect(ruleOf("borrow").effect(p, 1_000n, feeOf("borrow", 1_000n))).toEqual(pos(10_000n, 5_000n));
  });
  it("repay pays at most the debt", () => {
    expect(ruleOf("repay").effect(p, 1_000n, none)).toEqual(pos(10_000n, 3_000n));
    expect(ruleOf("repay").effect(p, 9_000n, none)).toEqual(pos(10_000n, 0n));
  });
  it("sell and withdraw take collateral out, never more than there is", () => {
    expect(ruleOf("sell").effect(p, 10_000n, none)).toEqual(pos(0n, 4_000n));
    expect(ruleOf("withdraw").effect(p, 1n, none)).toEqual(pos(9_999n, 4_000n));
    expect(() => ruleOf("withdraw").effect(p, 10_001n, none)).toThrow(PositionError);
    expect(() => ruleOf("sell").effect(p, 10_001n, none)).toThrow("amount exceeds the collateral of 0.01 USDC");
    try {
      ruleOf("sell").effect(p, 10_001n, none);
    } catch (e) {
      expect((e as PositionError).code).toBe("insufficient_collateral");
    }
  });
  it("protection, auto_repay and auto_deleverage repay debt from collateral; exit closes everything", () => {
    for (const a of ["protection", "auto_repay", "auto_deleverage"] as const) {
      expect(ruleOf(a).effect(p, 1_000n, none)).toEqual(pos(9_000n, 3_000n));
      expect(ruleOf(a).effect(p, 99_000n, none)).toEqual(pos(6_000n, 0n));
    }
    expect(() => ruleOf("protection").effect(pos(100n, 400n), 400n, none)).toThrow("collateral does not cover the repayment");
    try {
      ruleOf("auto_deleverage").effect(pos(100n, 400n), 400n, none);
    } catch (e) {
      expect((e as PositionError).code).toBe("insufficient_collateral");
    }
    expect(ruleOf("auto_repay").effect(pos(100n, 100n), 100n, none)).toEqual(pos(0n, 0n));
    expect(ruleOf("exit").effect(p, 1n, none)).toEqual(pos(0n, 0n));
  });
});

describe("the safety rail", () => {
  it("ltvIncreased compares exactly, with empty positions", () => {
    expect(ltvIncreased(pos(10n, 1n), pos(10n, 0n))).toBe(false);
    expect(ltvIncreased(pos(10n, 1n), pos(0n, 1n))).toBe(true); // collateral gone
    expect(ltvIncreased(pos(0n, 1n), pos(0n, 2n))).toBe(true); // more debt, still no collateral
    expect(ltvIncreased(pos(0n, 2n), pos(0n, 2n))).toBe(false);
    expect(ltvIncreased(pos(0n, 2n), pos(0n, 1n))).toBe(false);
    expect(ltvIncreased(pos(0n, 1n), pos(10n, 1n))).toBe(false); // collateral arrives
    expect(ltvIncreased(pos(10n, 1n), pos(10n, 2n))).toBe(true);
    expect(ltvIncreased(pos(10n, 1n), pos(20n, 2n))).toBe(false); // same LTV
    expect(ltvIncreased(pos(10n, 2n), pos(10n, 1n))).toBe(false);
  });

  it("aboveCeiling is strict and exact", () => {
    expect(aboveCeiling(pos(100n, 0n), 6000n)).toBe(false);
    expect(aboveCeiling(pos(0n, 1n), 6000n)).toBe(true);
    expect(aboveCeiling(pos(100n, 60n), 6000n)).toBe(false);
    expect(aboveCeiling(pos(100n, 61n), 6000n)).toBe(true);
  });

  it("breachesCeiling needs both: above the ceiling and raising LTV", () => {
    expect(breachesCeiling(pos(100n, 70n), pos(100n, 65n), 6000n)).toBe(false);
    expect(breachesCeiling(pos(100n, 50n), pos(100n, 61n), 6000n)).toBe(true);
    expect(breachesCeiling(pos(100n, 50n), pos(100n, 60n), 6000n)).toBe(false);
  });

  it("safeAmount: borrow room, withdrawable collateral, else the request", () => {
    expect(safeAmount(pos(100_000n, 40_000n), ruleOf("borrow"), 6000n, 1n)).toBe(20_000n);
    expect(safeAmount(pos(100_000n, 70_000n), ruleOf("borrow"), 6000n, 1n)).toBe(0n);
    expect(safeAmount(pos(100_000n, 0n), ruleOf("withdraw"), 6000n, 1n)).toBe(100_000n);
    expect(safeAmount(pos(100_000n, 30_000n), ruleOf("sell"), 6000n, 1n)).toBe(50_000n);
    expect(safeAmount(pos(100_000n, 30_001n), ruleOf("withdraw"), 6000n, 1n)).toBe(49_998n); // ceilDiv keeps it under
    expect(safeAmount(pos(10_000n, 9_000n), ruleOf("withdraw"), 6000n, 1n)).toBe(0n);
    expect(safeAmount(pos(100_000n, 0n), ruleOf("deposit"), 6000n, 777n)).toBe(777n);
  });

  it("simulate: fee, figures and the breach with its safe amount", () => {
    const ok = simulateAction(pos(60_000_000_000n, 24_000_000_000n, 8050), "borrow", 1_000_000_000n, PRESETS.balanced, 1);
    expect(ok).toMatchObject({ action: "borrow", amountMicro: 1_000_000_000n, ltvBefore: 40, ltvAfter: 41.67, healthAfter: 1.93, breach: null });
    expect(ok.fee.feeMicro).toBe(17_500_000n);
    const refused = simulateAction(pos(60_000_000_000n, 24_000_000_000n, 8050), "borrow", 20_000_000_000n, PRESETS.balanced);
    expect(refused.breach).toEqual({ safeAmountMicro: 12_000_000_000n });
    expect(refused.after).toEqual(pos(60_000_000_000n, 44_000_000_000n, 8050));
  });
});

// properties over every position, action, amount and preset
const position = fc.record({
  collateralMicro: fc.bigInt({ min: 1n, max: 10n ** 12n }),
  debtMicro: fc.bigInt({ min: 0n, max: 10n ** 12n }),
  liquidationThresholdBps: fc.integer({ min: 5000, max: 9000 }),
});
const withinCeiling = (ceil: bigint) => position.filter((p) => !aboveCeiling(p, ceil));
const amount = fc.bigInt({ min: 0n, max: 10n ** 11n });
const preset = fc.constantFrom(...PRESET_NAMES).map((n) => PRESETS[n]);

describe("LTV and health (Aave definitions)", () => {
  it("health score is liquidation threshold / LTV", () => {
    fc.assert(
      fc.property(
        position.filter((p) => p.debtMicro > 0n),
        (p) => {
          const exact = (Number(p.collateralMicro) * p.liquidationThresholdBps) / 10000 / Number(p.debtMicro);
          const hs = healthScore(p);
          expect(hs).toBeLessThanOrEqual(Math.min(HEALTH_SCORE_CAP, exact) + 1e-9);
          if (exact < HEALTH_SCORE_CAP) expect(hs).toBeGreaterThan(exact - 0.0100001);
        },
      ),
    );
  });

  it("the price drop to liquidation shrinks as LTV grows", () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 75, noNaN: true }), fc.double({ min: 1, max: 75, noNaN: true }), (a, b) => {
        const [lo, hi] = a < b ? [a, b] : [b, a];
        expect(priceDropToLiquidationPct(lo, 8050)).toBeGreaterThanOrEqual(priceDropToLiquidationPct(hi, 8050));
      }),
    );
  });
});

describe("simulated actions", () => {
  it("ltv_after is monotone in the amount for every action", () => {
    fc.assert(
      fc.property(
        position,
        fc.constantFrom("borrow", "deposit", "convert", "repay", "protection", "auto_repay", "auto_deleverage" as const),
        amount,
        amount,
        (p, action, a, b) => {
          const [lo, hi] = a < b ? [a, b] : [b, a];
          // collateral-funded repayments are defined for solvent positions (debt <= collateral);
          // an underwater position is Aave's liquidation domain, not the treasury's
          fc.pre(p.debtMicro <= p.collateralMicro);
          const sLo = simulateAction(p, action, lo, PRESETS.aggressive);
          const sHi = simulateAction(p, action, hi, PRESETS.aggressive);
          // exact comparison of debt/collateral ratios
          const r = (q: Position) => [q.debtMicro, q.collateralMicro] as const;
          const [dl, cl] = r(sLo.after);
          const [dh, ch] = r(sHi.after);
          if (action === "borrow") expect(dh * cl >= dl * ch).toBe(true);
          else if (cl > 0n && ch > 0n) expect(dh * cl <= dl * ch).toBe(true);
        },
      ),
    );
  });

  it("withdraw and sell raise LTV monotonically", () => {
    fc.assert(
      fc.property(position, fc.constantFrom("withdraw", "sell" as const), amount, amount, (p, action, a, b) => {
        const [lo, hi] = a < b ? [a, b] : [b, a];
        fc.pre(hi < p.collateralMicro);
        const sLo = simulateAction(p, action, lo, PRESETS.balanced);
        const sHi = simulateAction(p, action, hi, PRESETS.balanced);
        expect(sHi.ltvAfter).toBeGreaterThanOrEqual(sLo.ltvAfter);
      }),
    );
  });
});

describe("safety rail", () => {
  it("safe_amount never breaches the ceiling and is the largest amount that does not (borrow)", () => {
    fc.assert(
      fc.property(preset, position, (pr, p) => {
        const ceil = ceilingBps(pr);
        const safe = safeAmount(p, ruleOf("borrow"), ceil, 0n);
        expect(simulateAction(p, "borrow", safe, pr).breach).toBeNull();
        const over = simulateAction(p, "borrow", safe + 1n, pr);
        expect(over.breach).not.toBeNull();
        expect(over.breach!.safeAmountMicro).toBe(safe);
      }),
    );
  });

  it("same for withdraw and sell", () => {
    fc.assert(
      fc.property(preset, withinCeiling(6000n), fc.constantFrom("withdraw", "sell" as const), (pr, p, action) => {
        const ceil = ceilingBps(pr);
        const safe = safeAmount(p, ruleOf(action), ceil, 0n);
        expect(simulateAction(p, action, safe, pr).breach).toBeNull();
        if (safe < p.collateralMicro) expect(simulateAction(p, action, safe + 1n, pr).breach).not.toBeNull();
      }),
    );
  });

  it("a refused borrow reports resulting LTV above the ceiling, and retrying with safe_amount passes", () => {
    fc.assert(
      fc.property(preset, position, amount, (pr, p, a) => {
        const s = simulateAction(p, "borrow", a, pr);
        if (s.breach) {
          expect(s.ltvAfter).toBeGreaterThanOrEqual(pr.ceiling);
          expect(simulateAction(p, "borrow", s.breach.safeAmountMicro, pr).breach).toBeNull();
        } else {
          expect((p.debtMicro + a) * BPS <= ceilingBps(pr) * p.collateralMicro || a === 0n).toBe(true);
        }
      }),
    );
  });

  it("downward legs are never refused", () => {
    fc.assert(
      fc.property(position, fc.constantFrom("repay", "protection", "auto_repay", "auto_deleverage", "exit" as const), amount, (p, action, a) => {
        fc.pre(p.debtMicro <= p.collateralMicro);
        expect(simulateAction(p, action, a, PRESETS.conservative).breach).toBeNull();
      }),
    );
  });

  it("refuses a 10,000 USDC borrow on a 60,000 portfolio at 55% and offers 3,000", () => {
    const p = positionAtLtv(60_000_000_000n, 55, 8050);
    const s = simulateAction(p, "borrow", 10_000_000_000n, PRESETS.balanced);
    expect(s.breach?.safeAmountMicro).toBe(3_000_000_000n);
    expect(s.ltvAfter).toBe(71.67);
  });
});
