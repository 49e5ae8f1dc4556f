/**
 * Assets the treasury handles, with the risk parameters the sandbox uses.
 * The figures are modelled on Aave V3 on Base (WETH, cbBTC, native USDC) and
 * are documented in docs/DOMAIN.md; on a chain-backed treasury the Pool's own
 * figures (getUserAccountData) replace them.
 */
export type AssetSymbol = "BTC" | "ETH" | "USDC";

export interface AssetRisk {
  symbol: AssetSymbol;
  /** decimals of the on-chain token (cbBTC 8, WETH 18, USDC 6) */
  decimals: number;
  /** max LTV for borrowing, basis points */
  maxLtvBps: number;
  /** liquidation threshold, basis points */
  liquidationThresholdBps: number;
  /** fixed sandbox price in micro-USDC per whole unit (simulation only) */
  sandboxPriceMicro: bigint;
}

export const ASSETS: Record<AssetSymbol, AssetRisk> = {
  BTC: { symbol: "BTC", decimals: 8, maxLtvBps: 7300, liquidationThresholdBps: 7800, sandboxPriceMicro: 60_000_000_000n },
  ETH: { symbol: "ETH", decimals: 18, maxLtvBps: 8000, liquidationThresholdBps: 8300, sandboxPriceMicro: 3_000_000_000n },
  USDC: { symbol: "USDC", decimals: 6, maxLtvBps: 7500, liquidationThresholdBps: 7800, sandboxPriceMicro: 1_000_000n },
};

export const SUPPORTED_ASSETS: AssetSymbol[] = ["BTC", "ETH", "USDC"];

/**
 * Liquidation threshold of the reference collateral mix (50% BTC, 50% ETH):
 * (7800 + 8300) / 2 = 8050 bps. Used where the
 * spec gives an LTV but no portfolio (public liquidation distance, preview
 * without an address).
 */
export const REFERENCE_LIQUIDATION_THRESHOLD_BPS = 8050;

/** value in micro-USDC of `units` (token base units) at the sandbox price */
export function sandboxValueMicro(symbol: AssetSymbol, units: bigint): bigint {
  const a = ASSETS[symbol];
  return (units * a.sandboxPriceMicro) / 10n ** BigInt(a.decimals);
}

/** token base units bought with `micro` at the sandbox price (rounded down) */
export function sandboxUnitsFor(symbol: AssetSymbol, micro: bigint): bigint {
  const a = ASSETS[symbol];
  return (micro * 10n ** BigInt(a.decimals)) / a.sandboxPriceMicro;
}
