/**
 * Placeholder of the trigger index's types (design-40.md, part A): the two interfaces and IndexAsset the chain
 * reads produce (gateway/src/protection/watch-reads.ts). Helper A's full file replaces this one.
 */
export type IndexAsset = "USDC" | "WETH" | "cbBTC";

export interface MarketAt {
  /** Aave oracle, base currency (8 decimals USD) */
  prices: Record<IndexAsset, bigint>;
  /** ray (1e27): getReserveNormalizedIncome */
  liquidityIndex: Record<IndexAsset, bigint>;
  /** ray: getReserveNormalizedVariableDebt(USDC) */
  debtIndex: bigint;
  liquidationThresholdBps: Record<IndexAsset, bigint>;
  decimals: Record<IndexAsset, number>;
}

export interface WatchedPosition {
  /** treasury id */
  id: string;
  /** scaled aToken balance, only assets enabled as collateral */
  scaledCollateral: Partial<Record<IndexAsset, bigint>>;
  /** scaled variable USDC debt */
  scaledDebt: bigint;
  /** health trigger, 1e18 = 1.0 */
  triggerWad: bigint;
  /** a position in an e-mode: always a candidate */
  eMode?: boolean;
}
