/**
 * The chains the service knows and their Aave V3 markets, from the Aave
 * address book (never from literals). The one declaration of the treasury
 * chains (TREASURY_CHAINS): every type, schema and loop over them derives
 * from it.
 */
import { AaveV3Arbitrum, AaveV3Base, AaveV3Ethereum } from "@aave-dao/aave-address-book";

/**
 * The chains a treasury lives on, in the order the service lists them (gateway
 * status, the signer's default policy, `expected one of` in errors; the
 * request schemas' ChainName lists them alphabetically, schemas/common.ts).
 */
export const TREASURY_CHAINS = ["base", "arbitrum"] as const;
export type TreasuryChain = (typeof TREASURY_CHAINS)[number];

export const isTreasuryChain = (value: unknown): value is TreasuryChain => (TREASURY_CHAINS as readonly unknown[]).includes(value);

/** the chains with a known Aave V3 market: the treasury chains and Ethereum (market rates only) */
export type ChainKey = "ethereum" | TreasuryChain;

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

/** A treasury chain: its names, its chain id and its Aave V3 market. */
export interface TreasuryChainInfo {
  chain: TreasuryChain;
  /** the name people read ("Aave V3 on Base") */
  displayName: string;
  /** symbol of the chain's BTC collateral token (`market.btc`) */
  btcSymbol: string;
  chainId: number;
  market: AaveMarket;
}

export const CHAINS: Record<TreasuryChain, TreasuryChainInfo> = {
  base: { chain: "base", displayName: "Base", btcSymbol: "cbBTC", chainId: AAVE_MARKETS.base.chainId, market: AAVE_MARKETS.base },
  arbitrum: { chain: "arbitrum", displayName: "Arbitrum", btcSymbol: "WBTC", chainId: AAVE_MARKETS.arbitrum.chainId, market: AAVE_MARKETS.arbitrum },
};

/** the treasury chains' entries of a per-chain record (an RPC URL per chain, say), in TREASURY_CHAINS order */
export const onTreasuryChains = <T>(byChain: Partial<Record<ChainKey, T>>): Partial<Record<TreasuryChain, T>> =>
  Object.fromEntries(TREASURY_CHAINS.map((chain) => [chain, byChain[chain]])) as Partial<Record<TreasuryChain, T>>;

/** Chains of the market-rates endpoint, in the order served. */
export const RATE_CHAINS: ChainKey[] = ["ethereum", "arbitrum", "base"];
