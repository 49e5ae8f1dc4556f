/**
 * The chains the service knows and their Aave V3 markets, from the Aave
 * address book (never from literals).
 */
import { AaveV3Arbitrum, AaveV3Base, AaveV3Ethereum } from "@aave-dao/aave-address-book";

export type ChainKey = "ethereum" | "arbitrum" | "base";

export interface AaveMarket {
  chain: ChainKey;
  chainId: number;
  pool: `0x${string}`;
  poolAddressesProvider: `0x${string}`;
  oracle: `0x${string}`;
  /** native (Circle-issued) USDC of the chain */
  usdc: `0x${string}`;
  weth: `0x${string}`;
  /** the chain's BTC collateral token (cbBTC on Base and Ethereum, WBTC on Arbitrum) */
  btc: `0x${string}`;
}

export const AAVE_MARKETS: Record<ChainKey, AaveMarket> = {
  ethereum: {
    chain: "ethereum",
    chainId: AaveV3Ethereum.CHAIN_ID,
    pool: AaveV3Ethereum.POOL,
    poolAddressesProvider: AaveV3Ethereum.POOL_ADDRESSES_PROVIDER,
    oracle: AaveV3Ethereum.ORACLE,
    usdc: AaveV3Ethereum.ASSETS.USDC.UNDERLYING,
    weth: AaveV3Ethereum.ASSETS.WETH.UNDERLYING,
    btc: AaveV3Ethereum.ASSETS.cbBTC.UNDERLYING,
  },
  arbitrum: {
    chain: "arbitrum",
    chainId: AaveV3Arbitrum.CHAIN_ID,
    pool: AaveV3Arbitrum.POOL,
    poolAddressesProvider: AaveV3Arbitrum.POOL_ADDRESSES_PROVIDER,
    oracle: AaveV3Arbitrum.ORACLE,
    // the book's USDC key is bridged USDC.e; USDCn is native USDC
    usdc: AaveV3Arbitrum.ASSETS.USDCn.UNDERLYING,
    weth: AaveV3Arbitrum.ASSETS.WETH.UNDERLYING,
    btc: AaveV3Arbitrum.ASSETS.WBTC.UNDERLYING,
  },
  base: {
    chain: "base",
    chainId: AaveV3Base.CHAIN_ID,
    pool: AaveV3Base.POOL,
    poolAddressesProvider: AaveV3Base.POOL_ADDRESSES_PROVIDER,
    oracle: AaveV3Base.ORACLE,
    usdc: AaveV3Base.ASSETS.USDC.UNDERLYING,
    weth: AaveV3Base.ASSETS.WETH.UNDERLYING,
    btc: AaveV3Base.ASSETS.cbBTC.UNDERLYING,
  },
};

/** Chains of the market-rates endpoint, in the order served. */
export const RATE_CHAINS: ChainKey[] = ["ethereum", "arbitrum", "base"];
