import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AmountPrecisionError, formatDecimal, parseDecimal, parseUsdc, usdcToNumber } from "@treasury/core/domain/money";

describe("money", () => {
  it("parses JSON numbers into exact micro-USDC", () => {
    expect(parseUsdc(0.1)).toBe(100_000n);
    expect(parseUsdc(100)).toBe(100_000_000n);
    expect(parseUsdc(1e-6)).toBe(1n);
    expect(parseUsdc(123456.789012)).toBe(123_456_789_012n);
    expect(parseUsdc(1e21)).toBe(10n ** 27n);
    expect(() => parseUsdc(1e-7)).toThrow(AmountPrecisionError);
    expect(() => parseUsdc(0.1234567)).toThrow(AmountPrecisionError);
  });

  it("round-trips every micro amount through a JSON number", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), (micro) => {
        const asNumber = usdcToNumber(micro);
        expect(parseUsdc(JSON.parse(JSON.stringify(asNumber)))).toBe(micro);
      }),
    );
  });

  it("formats and parses decimals symmetrically", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 18 }), (v, d) => {
        expect(parseDecimal(formatDecimal(v, d), d)).toBe(v);
      }),
    );
  });
});
