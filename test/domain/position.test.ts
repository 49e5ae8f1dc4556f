import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BPS } from "@treasury/core/domain/money";
import {
  aboveCeiling,
  healthScore,
  HEALTH_SCORE_CAP,
  positionAtLtv,
  priceDropToLiquidationPct,
  safeAmount,
  type Position,
} from "@treasury/core/domain/position";
import { ceilingBps, PRESETS, PRESET_NAMES } from "@treasury/core/domain/presets";
import { ruleOf, simulateAction } from "@treasury/core/actions";

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
