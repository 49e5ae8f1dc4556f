/**
 * What the chain says of a wallet for an action planned on its figures (exit): exact units, oracle prices
 * (micro-USDC per whole unit), liquidation thresholds (bps; 0 for a supply that is not the wallet's
 * collateral). Read by `ChainGateway.marketSnapshot` (gateway/src/chain/chain-gateway.ts), planned on by an action's
 * `planOnChain` (actions/declaration.ts).
 */
export interface MarketSnapshot {
  debt: bigint;
  walletUsdc: bigint;
  supplied: Record<"USDC" | "ETH" | "BTC", bigint>;
  price: Record<"USDC" | "ETH" | "BTC", bigint>;
  lt: Record<"USDC" | "ETH" | "BTC", bigint>;
}
