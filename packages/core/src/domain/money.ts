/**
 * Exact money. Every USDC amount inside the service is a bigint of micro-USDC
 * (USDC has 6 decimals: 1 USDC = 1_000_000 micro). Floats exist only at the
 * JSON edge: `parseUsdc` turns a JSON number into micro-units without loss
 * (or refuses it), `usdcToNumber` turns micro-units back into a JSON number.
 */

export type Micro = bigint;

export const USDC_DECIMALS = 6;
export const MICRO_PER_USDC = 1_000_000n;
/** Basis points in one whole (100%). */
export const BPS = 10_000n;

export class AmountPrecisionError extends Error {
  constructor(
    readonly value: number,
    readonly decimals: number,
  ) {
    super(`amount ${value} has more than ${decimals} decimal places`);
  }
}

/**
 * Parse a decimal string (optionally in exponent form, as `String(number)`
 * produces) into an integer scaled by 10^decimals. Throws AmountPrecisionError
 * when the value cannot be represented exactly at that scale.
 */
export function parseDecimal(text: string, decimals: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text.trim());
  if (!match) throw new TypeError(`not a decimal number: ${text}`);
  const [, sign, intPart = "0", fracPart = "", expPart] = match;
  const exponent = expPart ? Number.parseInt(expPart, 10) : 0;
  let digits = intPart + fracPart;
  // position of the decimal point counted from the left of `digits`
  let point = intPart.length + exponent;
  if (point < 0) {
    digits = "0".repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits = digits + "0".repeat(point - digits.length);
  const whole = digits.slice(0, point) || "0";
  let frac = digits.slice(point);
  frac = frac.replace(/0+$/, "");
  if (frac.length > decimals) throw new AmountPrecisionError(Number(text), decimals);
  const scaled = BigInt(whole) * 10n ** BigInt(decimals) + BigInt((frac || "0").padEnd(decimals, "0"));
  return sign === "-" ? -scaled : scaled;
}

/** JSON number of USDC -> micro-USDC, exactly, or AmountPrecisionError. */
export function parseUsdc(value: number): Micro {
  if (!Number.isFinite(value)) throw new TypeError("amount must be finite");
  return parseDecimal(String(value), USDC_DECIMALS);
}

/** True when the JSON number has at most 6 decimals (is exact in micro-USDC). */
export function isExactUsdc(value: number): boolean {
  try {
    parseUsdc(value);
    return true;
  } catch {
    return false;
  }
}

/** micro-USDC -> JSON number (the only place a float appears). */
export function usdcToNumber(micro: Micro): number {
  return Number(formatDecimal(micro, USDC_DECIMALS));
}

/** Integer scaled by 10^decimals -> exact decimal string. */
export function formatDecimal(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const base = 10n ** BigInt(decimals);
  const whole = abs / base;
  const frac = (abs % base).toString().padStart(decimals, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/** a * bps / 10000, rounded half up (used for fees). */
export function applyBps(amount: Micro, bps: bigint): Micro {
  if (amount < 0n) throw new RangeError("amount must not be negative");
  return (amount * bps + BPS / 2n) / BPS;
}

/** Ceiling division for non-negative bigints. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new RangeError("divisor must be positive");
  if (a <= 0n) return a / b;
  return (a + b - 1n) / b;
}

export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

export function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/**
 * num/den as a percentage rounded half up to `places` decimals, as a JSON
 * number. den must be positive.
 */
export function ratioToPct(num: bigint, den: bigint, places = 2): number {
  if (den <= 0n) throw new RangeError("denominator must be positive");
  const scale = 10n ** BigInt(places);
  const scaled = (num * 100n * scale * 2n + den) / (den * 2n);
  return Number(formatDecimal(scaled, places));
}
