/**
 * Figures a person reads. Money stays exact (integers in token units: USDC 6
 * decimals, WETH 18, cbBTC 8, Aave's USD base 8) until here, where it is
 * formatted once, rounded half up to what is worth reading: USD to the cent,
 * USDC to the micro-USDC it is counted in (trailing zeros dropped), ETH and BTC
 * to 6 decimals, a health factor to 2 (rounded down, as the gateway does: a
 * position is never shown safer than it is), a percentage to 2. JSON documents
 * carry exact decimal strings (formatUnits) instead.
 */
import { formatUnits, getAddress } from "viem";
import { CHAINS } from "@treasury/core/contracts/chains";
import { parseUsdc } from "@treasury/core/domain/money";

/** `units` scaled by 10^decimals, rounded half up to `places` decimals; `fixed` keeps trailing zeros */
export function roundUnits(units: bigint, decimals: number, places: number, fixed = false): string {
  const negative = units < 0n;
  let abs = negative ? -units : units;
  if (places < decimals) {
    const step = 10n ** BigInt(decimals - places);
    abs = ((abs + step / 2n) / step) * step;
  }
  let text = formatUnits(abs, decimals);
  if (fixed) {
    const [whole, frac = ""] = text.split(".");
    text = places === 0 ? whole! : `${whole}.${frac.padEnd(places, "0").slice(0, places)}`;
  }
  return `${negative && abs !== 0n ? "-" : ""}${text}`;
}

/** micro-USDC, exact: "490 USDC", "0.05 USDC" */
export const usdc = (micro: bigint): string => `${formatUnits(micro, 6)} USDC`;
/** a JSON number of USDC from the gateway (exact to 6 decimals in this API), through its decimal text */
export const usdcNumber = (n: number): string => usdc(parseUsdc(n));
/** wei as ETH (or WETH) to 6 decimals: "0.3234 WETH" */
export const eth = (wei: bigint, symbol = "ETH"): string => `${roundUnits(wei, 18, 6)} ${symbol}`;
/** Aave's USD base (8 decimals) to the cent: "1460.20 USD" */
export const usdBase = (base8: bigint): string => `${roundUnits(base8, 8, 2, true)} USD`;
/** a health factor (1e18): 2 decimals, rounded down; none without debt */
export const healthFactor = (wad: bigint | null): string => (wad === null ? "none (no debt)" : roundUnits((wad / 10n ** 16n) * 10n ** 16n, 18, 2, true));
/** num/den as a percentage, 2 decimals, half up: "33.33%" */
export function percent(num: bigint, den: bigint): string {
  if (den <= 0n) return num > 0n ? "n/a (debt without collateral)" : "0.00%";
  const hundredths = (num * 10_000n * 2n + den) / (den * 2n);
  return `${roundUnits(hundredths, 2, 2, true)}%`;
}
/** a percentage the gateway states as a JSON number (rounded to 2 decimals there): at most 2 decimals */
export const pct = (n: unknown): string => (typeof n === "number" && Number.isFinite(n) ? `${n.toFixed(2).replace(/\.?0+$/, "")}%` : `${String(n)}%`);

/** a token of the treasury chains' markets, by address: its symbol and decimals */
export function tokenInfo(address: string): { symbol: string; decimals: number } | undefined {
  const a = getAddress(address);
  for (const { market: m, btcSymbol } of Object.values(CHAINS)) {
    if (getAddress(m.usdc) === a) return { symbol: "USDC", decimals: 6 };
    if (getAddress(m.weth) === a) return { symbol: "WETH", decimals: 18 };
    if (getAddress(m.btc) === a) return { symbol: btcSymbol, decimals: 8 };
  }
  return undefined;
}

/** units of a token as a person reads them: USDC exact to the micro, WETH and BTC to 6 decimals */
export function tokenAmount(units: bigint, token: string): string {
  const t = tokenInfo(token);
  if (!t) return `${units} units of ${token}`;
  return `${roundUnits(units, t.decimals, Math.min(t.decimals, 6))} ${t.symbol}`;
}

/** an exact JSON-safe decimal string of token units (for --json documents) */
export const exact = (units: bigint, decimals: number): string => formatUnits(units, decimals);
