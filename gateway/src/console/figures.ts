/**
 * What a person reads in the console: figures rounded once, at the edge, to what the amount means (cents for USD
 * and USDC, two significant digits for a gas cost under a cent), and times in the reader's own time zone. The
 * API keeps its numbers as they are; the page and its test format them here.
 */

/** a USD or USDC amount: cents, thousands grouped; a non-zero amount under a cent to two significant digits */
export function money(v: unknown): string {
  if (typeof v !== "number" || !Number.isFinite(v)) return "n/a";
  if (v !== 0 && Math.abs(v) < 0.01) return v.toLocaleString("en-US", { maximumSignificantDigits: 2 });
  return v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

/** a ratio or a score (LTV %, health): two decimals at most, no trailing zeros */
export function figure(v: unknown): string {
  return typeof v === "number" && Number.isFinite(v) ? String(Math.round(v * 100) / 100) : "n/a";
}

/** an ISO time in the reader's time zone (the browser's), e.g. "Nov 27, 2026, 10:45 AM" */
export function when(iso: unknown, timeZone?: string): string {
  if (typeof iso !== "string" || Number.isNaN(Date.parse(iso))) return "n/a";
  return new Date(iso).toLocaleString("en-US", { dateStyle: "medium", timeStyle: "short", ...(timeZone ? { timeZone } : {}) });
}
