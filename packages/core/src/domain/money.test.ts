/** Exact money: parsing, formatting and arithmetic on micro-units, including their refusals. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AmountPrecisionError,
  applyBps,
  BPS,
  ceilDiv,
  formatDecimal,
  isExactUsdc,
  maxBig,
  MICRO_PER_USDC,
  minBig,
  parseDecimal,
  parseUsdc,
  ratioToPct,
  USDC_DECIMALS,
  usdcToNumber,
} from "./money";

describe("parseDecimal and parseUsdc", () => {
  it("parses whole, fractional, exponent and negative forms exactly", () => {
    expect(parseDecimal("12", 6)).toBe(12_000_000n);
    expect(parseDecimal("12.5", 6)).toBe(12_500_000n);
    expect(parseDecimal("0.000001", 6)).toBe(1n);
    expect(parseDecimal("1e-6", 6)).toBe(1n);
    expect(parseDecimal("1.5e3", 6)).toBe(1_500_000_000n);
    expect(parseDecimal("1E+2", 0)).toBe(100n);
    expect(parseDecimal("-2.25", 2)).toBe(-225n);
    expect(parseDecimal(" 7 ", 1)).toBe(70n);
    expect(parseDecimal("1.500000", 6)).toBe(1_500_000n); // trailing zeros are not precision
    expect(parseDecimal("0.5", 0 + 1)).toBe(5n);
  });

  it("refuses more decimals than the scale and text that is not a number", () => {
    expect(() => parseDecimal("0.0000001", 6)).toThrow(AmountPrecisionError);
    expect(() => parseDecimal("1e-7", 6)).toThrow("amount 1e-7 has more than 6 decimal places");
    expect(() => parseDecimal("abc", 6)).toThrow(TypeError);
    expect(() => parseDecimal("abc", 6)).toThrow("not a decimal number: abc");
    expect(() => parseDecimal("1.2.3", 6)).toThrow(TypeError);
    const err = (() => {
      try {
        parseDecimal("0.1234567", 6);
      } catch (e) {
        return e as AmountPrecisionError;
      }
    })()!;
    expect([err.value, err.decimals]).toEqual([0.1234567, 6]);
  });

  it("parseUsdc refuses non-finite numbers; isExactUsdc says whether 6 decimals hold it", () => {
    expect(parseUsdc(100.25)).toBe(100_250_000n);
    expect(parseUsdc(1e-6)).toBe(1n);
    expect(() => parseUsdc(Number.POSITIVE_INFINITY)).toThrow("amount must be finite");
    expect(() => parseUsdc(Number.NaN)).toThrow(TypeError);
    expect(isExactUsdc(0.1)).toBe(true);
    expect(isExactUsdc(0.1234567)).toBe(false);
    expect([USDC_DECIMALS, MICRO_PER_USDC, BPS]).toEqual([6, 1_000_000n, 10_000n]);
  });
});

describe("formatting and arithmetic", () => {
  it("formatDecimal writes exact decimals without trailing zeros, with a sign", () => {
    expect(formatDecimal(1_500_000n, 6)).toBe("1.5");
    expect(formatDecimal(1n, 6)).toBe("0.000001");
    expect(formatDecimal(2_000_000n, 6)).toBe("2");
    expect(formatDecimal(-1_250_000n, 6)).toBe("-1.25");
    expect(formatDecimal(0n, 6)).toBe("0");
    expect(usdcToNumber(123_456_789n)).toBe(123.456789);
  });

  it("applyBps rounds half up and refuses negative amounts", () => {
    expect(applyBps(10_000n, 200n)).toBe(200n);
    expect(applyBps(25n, 200n)).toBe(1n);
    expect(applyBps(24n, 200n)).toBe(0n);
    expect(() => applyBps(-1n, 200n)).toThrow("amount must not be negative");
  });

  it("ceilDiv rounds up, keeps non-positive numerators, refuses a non-positive divisor", () => {
    expect(ceilDiv(10n, 3n)).toBe(4n);
    expect(ceilDiv(9n, 3n)).toBe(3n);
    expect(ceilDiv(1n, 3n)).toBe(1n);
    expect(ceilDiv(0n, 3n)).toBe(0n);
    expect(ceilDiv(-7n, 2n)).toBe(-3n);
    expect(() => ceilDiv(1n, 0n)).toThrow("divisor must be positive");
    expect(() => ceilDiv(1n, -2n)).toThrow(RangeError);
  });

  it("minBig, maxBig and ratioToPct", () => {
    expect([minBig(1n, 2n), minBig(2n, 1n), maxBig(1n, 2n), maxBig(2n, 1n)]).toEqual([1n, 1n, 2n, 2n]);
    expect(ratioToPct(1n, 3n)).toBe(33.33);
    expect(ratioToPct(2n, 3n)).toBe(66.67); // half up
    expect(ratioToPct(1n, 8n, 3)).toBe(12.5);
    expect(ratioToPct(1n, 200n, 0)).toBe(1); // 0.5 -> 1
    expect(() => ratioToPct(1n, 0n)).toThrow("denominator must be positive");
  });
});

// properties over every amount
describe("money", () => {
  it("parses JSON numbers into exact micro-USDC", () => {
    expect(parseUsdc(0.1)).toBe(100_000n);
    expect(parseUsdc(100)).toBe(100_000_000n);
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
