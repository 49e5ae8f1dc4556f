import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { advanceRatchet, FEE_TIERS, INITIAL_RATCHET, tierIndexForVolume } from "@treasury/core/domain/fee-schedule";
import { ACTIONS, feeOf, isUpwardLeg } from "@treasury/core/actions";

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
