/** Fee rules (spec section 1) and the one-way ratchet: exact fees, rates and bases at every tier. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { advanceRatchet, FEE_INVARIANTS, FEE_TIERS, feeScheduleDocument, INITIAL_RATCHET, tierAt, tierIndexForVolume } from "./fee-schedule";
import { ACTIONS, FREE_ACTIONS, TREASURY_ACTIONS, feeKindOf, feeOf, isUpwardLeg } from "../actions";
import { PROTECTION_COSTS } from "./protection-terms";

const M = 1_000_000_000_000n; // one million USDC in micro

describe("feeFor", () => {
  it("deposit and convert cost 2% at every tier: they never step down with volume", () => {
    for (let tier = 0; tier < FEE_TIERS.length; tier++) {
      expect(feeOf("deposit", 1_000_000_000n, tier)).toEqual({ feeMicro: 20_000_000n, feeBps: 200n, basis: "2% of the amount when funds enter the service" });
      expect(feeOf("convert", 1_000_000_000n, tier)).toEqual({ feeMicro: 20_000_000n, feeBps: 200n, basis: "2% of the amount converted from USDC to BTC/ETH" });
    }
  });

  it("borrow pays the cycle fee of the tier: 2%, 1.75%, 1.5%, 1.25%", () => {
    const expected = [
      [200n, 20_000_000n, "launch", 2],
      [175n, 17_500_000n, "growth", 1.75],
      [150n, 15_000_000n, "scale", 1.5],
      [125n, 12_500_000n, "institutional", 1.25],
    ] as const;
    expected.forEach(([bps, fee, tier, pct], i) => {
      expect(feeOf("borrow", 1_000_000_000n, i)).toEqual({
        feeMicro: fee,
        feeBps: bps,
        basis: `${pct}% of the amount borrowed per execution (cycle fee, tier ${tier}); the lending protocol's variable interest applies in addition`,
      });
    });
  });

  it("every downward leg is free", () => {
    for (const action of ["repay", "sell", "withdraw", "exit", "protection", "auto_repay", "auto_deleverage"] as const) {
      expect(feeOf(action, 123_456_789n, 0)).toEqual({ feeMicro: 0n, feeBps: 0n, basis: "downward legs are free (0%)" });
      expect(feeKindOf(action)).toBe("none");
      expect(isUpwardLeg(action)).toBe(false);
    }
  });

  it("rounds half up to the micro-USDC and defaults to the launch tier", () => {
    expect(feeOf("deposit", 25n).feeMicro).toBe(1n); // 0.5 -> 1
    expect(feeOf("deposit", 24n).feeMicro).toBe(0n); // 0.48 -> 0
    expect(feeOf("borrow", 1_000_000n).feeBps).toBe(200n);
  });

  it("knows the kinds of the upward legs and the action lists", () => {
    expect([feeKindOf("deposit"), feeKindOf("convert"), feeKindOf("borrow")]).toEqual(["deposit", "buy", "cycle"]);
    expect(ACTIONS.filter(isUpwardLeg)).toEqual(["deposit", "convert", "borrow"]);
    expect(TREASURY_ACTIONS).toEqual(["deposit", "convert", "borrow", "repay", "withdraw", "sell", "exit"]);
  });
});

describe("the fee schedule and its ratchet", () => {
  it("tiers start at 0, 10M, 50M and 250M of platform volume", () => {
    expect(FEE_TIERS.map((t) => [t.tier, t.minVolumeMicro])).toEqual([
      ["launch", 0n],
      ["growth", 10n * M],
      ["scale", 50n * M],
      ["institutional", 250n * M],
    ]);
  });

  it("tierIndexForVolume steps exactly at each threshold", () => {
    expect(tierIndexForVolume(0n)).toBe(0);
    expect(tierIndexForVolume(10n * M - 1n)).toBe(0);
    expect(tierIndexForVolume(10n * M)).toBe(1);
    expect(tierIndexForVolume(50n * M - 1n)).toBe(1);
    expect(tierIndexForVolume(50n * M)).toBe(2);
    expect(tierIndexForVolume(250n * M)).toBe(3);
    expect(tierIndexForVolume(10_000n * M)).toBe(3);
  });

  it("advanceRatchet adds volume, moves the tier up, never down, and refuses negative volume", () => {
    expect(INITIAL_RATCHET).toEqual({ tierIndex: 0, platformVolumeMicro: 0n });
    const a = advanceRatchet(INITIAL_RATCHET, 10n * M);
    expect(a).toEqual({ tierIndex: 1, platformVolumeMicro: 10n * M });
    expect(advanceRatchet({ tierIndex: 3, platformVolumeMicro: 0n }, 1n)).toEqual({ tierIndex: 3, platformVolumeMicro: 1n });
    expect(advanceRatchet(a, 0n)).toEqual(a);
    expect(() => advanceRatchet(a, -1n)).toThrow(RangeError);
    expect(() => advanceRatchet(a, -1n)).toThrow("volume only grows");
  });

  it("tierAt clamps to the known tiers", () => {
    expect(tierAt(-5).tier).toBe("launch");
    expect(tierAt(0).tier).toBe("launch");
    expect(tierAt(2).tier).toBe("scale");
    expect(tierAt(99).tier).toBe("institutional");
  });

  it("the /fees.json document states the current tier, the ratchet, every tier and the invariants", () => {
    const doc = feeScheduleDocument({ tierIndex: 1, platformVolumeMicro: 12n * M + 999_999n }, "https://gw.example/fees.json", FREE_ACTIONS);
    expect(doc).toEqual({
      object: "service_fee_schedule",
      current_tier: { tier: "growth", deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 1.75 },
      ratchet: {
        direction: "one_way_down",
        platform_volume_usdc: 12_000_000,
        note: "Cycle fees step down as cumulative fee-bearing platform volume crosses each threshold and never step back up.",
      },
      tiers: [
        { tier: "launch", min_platform_volume_usdc: 0, deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 2 },
        { tier: "growth", min_platform_volume_usdc: 10_000_000, deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 1.75 },
        { tier: "scale", min_platform_volume_usdc: 50_000_000, deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 1.5 },
        { tier: "institutional", min_platform_volume_usdc: 250_000_000, deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 1.25 },
      ],
      free_actions: ["repay", "withdraw", "sell", "exit", "protection", "auto_repay", "auto_deleverage"],
      protection_costs: { ...PROTECTION_COSTS },
      invariants: FEE_INVARIANTS,
      url: "https://gw.example/fees.json",
    });
    expect(FEE_INVARIANTS).toHaveLength(6);
    expect(FEE_INVARIANTS[0]).toBe("Deposits cost 2% when funds enter the service.");
    expect(FEE_INVARIANTS[3]).toMatch(/^Downward legs are always free/);
  });
});

// properties over every amount, action and tier
const micro = fc.bigInt({ min: 0n, max: 100_000_000_000n }); // up to 100,000 USDC
const twoPct = (a: bigint) => (a * 200n + 5000n) / 10000n;

describe("fees (spec section 1)", () => {
  it("charges exactly 2% on deposit, convert and borrow at the launch tier", () => {
    fc.assert(
      fc.property(fc.constantFrom("deposit", "convert", "borrow" as const), micro, (action, amount) => {
        const fee = feeOf(action, amount, 0);
        expect(fee.feeMicro).toBe(twoPct(amount));
        expect(fee.feeBps).toBe(200n);
        // the fee is within half a micro-unit of the exact 2%
        const diff = fee.feeMicro * 10000n - amount * 200n;
        expect(diff <= 5000n && diff >= -5000n).toBe(true);
      }),
    );
  });

  it("charges nothing on every downward leg, at every tier", () => {
    const downward = ACTIONS.filter((a) => !isUpwardLeg(a));
    expect(downward.sort()).toEqual(["auto_deleverage", "auto_repay", "exit", "protection", "repay", "sell", "withdraw"]);
    fc.assert(
      fc.property(fc.constantFrom(...downward), micro, fc.integer({ min: 0, max: FEE_TIERS.length - 1 }), (action, amount, tier) => {
        expect(feeOf(action, amount, tier).feeMicro).toBe(0n);
      }),
    );
  });
});

describe("fee ratchet (rule 6)", () => {
  it("never steps back up and follows the volume thresholds", () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 0n, max: 100_000_000_000_000n }), { maxLength: 40 }), (adds) => {
        let state = INITIAL_RATCHET;
        for (const add of adds) {
          const next = advanceRatchet(state, add);
          expect(next.tierIndex >= state.tierIndex).toBe(true);
          expect(next.platformVolumeMicro).toBe(state.platformVolumeMicro + add);
          expect(next.tierIndex).toBe(Math.max(state.tierIndex, tierIndexForVolume(next.platformVolumeMicro)));
          state = next;
        }
      }),
    );
  });
});
