/**
 * Chain reads for the downward legs (withdraw, sell, exit): a Uniswap V3 quote, the Aave oracle's prices, the
 * reserves' risk parameters, a user's exact aToken and variable debt balances and a wallet's own tokens.
 *
 * Functions of a viem client and the addresses they read (no configuration of their own); every amount is a
 * bigint in the unit the chain keeps it in (token units, or Aave's base currency: USD with 8 decimals), never
 * a float. Reads made together are started together (Promise.all): a client whose transport batches
 * (`http(url, { batch: true })`, chain-gateway.ts's batched client) sends them in one JSON-RPC request.
 *
 * `at` pins the reads to one block (`{ blockNumber }`) or a tag; omitted, each call reads "latest", and on an
 * Anvil node that is mining a batch can straddle two blocks (anvil-reads.ts): pass a block number for reads
 * that must agree.
 */
import type { BlockTag, PublicClient } from "viem";
import { AAVE_ORACLE_PRICES_ABI } from "../contracts/aave-oracle";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { ERC20_ABI } from "../contracts/erc20";
import { QUOTER_V2_ABI } from "../contracts/uniswap-quoter";

export type Address = `0x${string}`;

/** the block the reads are made at: a number, a tag, or (empty or omitted) "latest" */
export type ReadAt =
  { blockNumber: bigint; blockTag?: undefined } | { blockNumber?: undefined; blockTag: BlockTag } | { blockNumber?: undefined; blockTag?: undefined };

/** the client calls these functions make */
export type MarketReader = Pick<PublicClient, "readContract" | "simulateContract">;

/**
 * What selling `amountIn` of `tokenIn` for `tokenOut` in the pool of fee tier `fee` (hundredths of a bip: 500 =
 * 0.05%) returns now, in `tokenOut` units: QuoterV2's quoteExactInputSingle run as an eth_call (it is not a
 * view: it runs the swap and reverts with the result). Exactly what SwapRouter02.exactInputSingle would return
 * in the same state. No price limit. 0 in quotes 0 out (the pool refuses a zero swap).
 */
export async function quoteExactIn(
  client: MarketReader,
  quoter: Address,
  tokenIn: Address,
  tokenOut: Address,
  fee: number,
  amountIn: bigint,
  at: ReadAt = {},
): Promise<bigint> {
  if (amountIn < 0n) throw new RangeError(`amountIn is negative: ${amountIn}`);
  if (amountIn === 0n) return 0n;
  const { result } = await client.simulateContract({
    address: quoter,
    abi: QUOTER_V2_ABI,
    functionName: "quoteExactInputSingle",
    args: [{ tokenIn, tokenOut, amountIn, fee, sqrtPriceLimitX96: 0n }],
    ...at,
  });
  return result[0];
}

/**
 * How much `tokenIn` buying exactly `amountOut` of `tokenOut` costs now (QuoterV2's quoteExactOutputSingle, an
 * eth_call; the amount SwapRouter02.exactOutputSingle would take). 0 out costs 0.
 */
export async function quoteExactOut(
  client: MarketReader,
  quoter: Address,
  tokenIn: Address,
  tokenOut: Address,
  fee: number,
  amountOut: bigint,
  at: ReadAt = {},
): Promise<bigint> {
  if (amountOut < 0n) throw new RangeError(`amountOut is negative: ${amountOut}`);
  if (amountOut === 0n) return 0n;
  const { result } = await client.simulateContract({
    address: quoter,
    abi: QUOTER_V2_ABI,
    functionName: "quoteExactOutputSingle",
    args: [{ tokenIn, tokenOut, amount: amountOut, fee, sqrtPriceLimitX96: 0n }],
    ...at,
  });
  return result[0];
}

/**
 * The Aave oracle's prices of `assets`, in the same order, in the market's base currency (USD with 8 decimals on
 * Aave V3: 3000 USD is 300_000_000_000n). One call (AaveOracle.getAssetsPrices). A price of 0 throws: no amount
 * may be computed from it.
 */
export async function oraclePrices(client: MarketReader, oracle: Address, assets: readonly Address[], at: ReadAt = {}): Promise<bigint[]> {
  if (assets.length === 0) return [];
  const prices = await client.readContract({ address: oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetsPrices", args: [assets], ...at });
  if (prices.length !== assets.length) throw new Error(`the oracle answered ${prices.length} prices for ${assets.length} assets`);
  prices.forEach((p, i) => {
    if (p === 0n) throw new Error(`the oracle prices ${assets[i]} at 0`);
  });
  return [...prices];
}

/**
 * a reserve's parameters from its configuration word (Aave V3 ReserveConfiguration). A user in an e-mode
 * category borrows against the category's LTV and threshold instead, for the reserves in its collateral bitmap
 * (3.6; not read here: the gateway's wallets are in none).
 */
export interface ReserveConfig {
  /** loan to value, basis points (bits 0-15) */
  ltvBps: bigint;
  /** liquidation threshold, basis points (bits 16-31) */
  liquidationThresholdBps: bigint;
  /** liquidation bonus, basis points over 10000 (bits 32-47: 10500 is a 5% bonus) */
  liquidationBonusBps: bigint;
  /** the underlying's decimals (bits 48-55) */
  decimals: bigint;
  /** bit 56 */
  active: boolean;
  /** bit 57: no supply or borrow; withdraw and repay still work */
  frozen: boolean;
  /** bit 58 */
  borrowingEnabled: boolean;
  /** bit 60: nothing works, withdraw and repay included */
  paused: boolean;
}

const bits = (data: bigint, from: number, width: number) => (data >> BigInt(from)) & ((1n << BigInt(width)) - 1n);

/** decode Aave V3's ReserveConfigurationMap.data (the same layout from V3.0 to V3.6 for these fields) */
export function decodeReserveConfiguration(data: bigint): ReserveConfig {
  return {
    ltvBps: bits(data, 0, 16),
    liquidationThresholdBps: bits(data, 16, 16),
    liquidationBonusBps: bits(data, 32, 16),
    decimals: bits(data, 48, 8),
    active: bits(data, 56, 1) === 1n,
    frozen: bits(data, 57, 1) === 1n,
    borrowingEnabled: bits(data, 58, 1) === 1n,
    paused: bits(data, 60, 1) === 1n,
  };
}

export interface ReserveRead extends ReserveConfig {
  aToken: Address;
  variableDebtToken: Address;
  /** the reserve's index in the pool's list (its bits in a user's configuration) */
  id: number;
}

/** whether a user's supply of the reserve `id` counts as collateral (Aave's UserConfigurationMap: bit 2 x id + 1) */
export const usedAsCollateral = (userConfiguration: bigint, id: number): boolean => ((userConfiguration >> BigInt(id * 2 + 1)) & 1n) === 1n;

/** each asset's reserve (Pool.getReserveData): its configuration and its aToken and variable debt token; one call per asset, together */
export async function readReserves(client: MarketReader, pool: Address, assets: readonly Address[], at: ReadAt = {}): Promise<ReserveRead[]> {
  return Promise.all(
    assets.map(async (asset) => {
      const data = await client.readContract({ address: pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [asset], ...at });
      if (/^0x0{40}$/.test(data.aTokenAddress)) throw new Error(`${asset} is not a reserve of the pool ${pool}`);
      return {
        ...decodeReserveConfiguration(data.configuration.data),
        aToken: data.aTokenAddress,
        variableDebtToken: data.variableDebtTokenAddress,
        id: data.id,
      };
    }),
  );
}

/**
 * `owner`'s balance of each token, in the same order, in token units. For an aToken: the supplied amount with
 * the interest earned to this block, rounded down (3.6: what withdraw(max) pays); for a variable debt token: the
 * exact debt, rounded up (what repay(max) takes now). aave-math.ts computes both from the scaled balances.
 */
export function balancesOf(client: MarketReader, tokens: readonly Address[], owner: Address, at: ReadAt = {}): Promise<bigint[]> {
  return Promise.all(tokens.map((token) => client.readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [owner], ...at })));
}

/** the addresses of a treasury's market: the Aave pool and oracle, its three assets, their aTokens and USDC's variable debt token */
export interface MarketAddresses {
  pool: Address;
  oracle: Address;
  usdc: Address;
  weth: Address;
  /** the chain's BTC collateral token (cbBTC on Base) */
  btc: Address;
  aUsdc: Address;
  aWeth: Address;
  aBtc: Address;
  variableDebtUsdc: Address;
}

export interface ByAsset<T> {
  usdc: T;
  weth: T;
  btc: T;
}

export interface MarketRead {
  /** oracle prices, base currency (USD, 8 decimals) */
  prices: ByAsset<bigint>;
  /** each reserve's configuration */
  reserves: ByAsset<ReserveConfig>;
  /** the user's aToken balances, token units (USDC 6, WETH 18, cbBTC 8 decimals) */
  supplied: ByAsset<bigint>;
  /** the user's variable USDC debt, USDC units (6 decimals), interest to this block included */
  debtUsdc: bigint;
  /** the user's own (wallet) balances of the underlying tokens, token units */
  wallet: ByAsset<bigint>;
  /** whether the user's supply of each counts as collateral (its collateral flag) */
  collateral: ByAsset<boolean>;
}

/**
 * Everything the downward legs need about `user` in `market`, in one round of 12 calls (one JSON-RPC request on
 * a batching client): the prices, the three reserves, three aToken balances, the USDC debt, three wallet
 * balances and the user's configuration (which supplies are collateral). The reserves read back their own aToken and debt token, and a mismatch with `market` throws
 * (balances of a wrong token would read 0, a silent wrong answer).
 */
export async function readMarket(client: MarketReader, market: MarketAddresses, user: Address, at: ReadAt = {}): Promise<MarketRead> {
  const assets = [market.usdc, market.weth, market.btc] as const;
  const [prices, reserves, balances, userConfiguration] = await Promise.all([
    oraclePrices(client, market.oracle, assets, at),
    readReserves(client, market.pool, assets, at),
    balancesOf(client, [market.aUsdc, market.aWeth, market.aBtc, market.variableDebtUsdc, market.usdc, market.weth, market.btc], user, at),
    client.readContract({ address: market.pool, abi: AAVE_POOL_ABI, functionName: "getUserConfiguration", args: [user], ...at }).then((c) => c.data),
  ]);
  const [usdc, weth, btc] = reserves as [ReserveRead, ReserveRead, ReserveRead];
  const expect = (what: string, read: Address, given: Address) => {
    if (read.toLowerCase() !== given.toLowerCase()) throw new Error(`the pool's ${what} is ${read}, not ${given}`);
  };
  expect("USDC aToken", usdc.aToken, market.aUsdc);
  expect("WETH aToken", weth.aToken, market.aWeth);
  expect("BTC aToken", btc.aToken, market.aBtc);
  expect("USDC variable debt token", usdc.variableDebtToken, market.variableDebtUsdc);
  const [pUsdc, pWeth, pBtc] = prices as [bigint, bigint, bigint];
  const [aUsdc, aWeth, aBtc, debtUsdc, wUsdc, wWeth, wBtc] = balances as [bigint, bigint, bigint, bigint, bigint, bigint, bigint];
  const config = ({ aToken: _a, variableDebtToken: _v, id: _i, ...rest }: ReserveRead): ReserveConfig => rest;
  return {
    prices: { usdc: pUsdc, weth: pWeth, btc: pBtc },
    reserves: { usdc: config(usdc), weth: config(weth), btc: config(btc) },
    supplied: { usdc: aUsdc, weth: aWeth, btc: aBtc },
    debtUsdc,
    wallet: { usdc: wUsdc, weth: wWeth, btc: wBtc },
    collateral: {
      usdc: usedAsCollateral(userConfiguration, usdc.id),
      weth: usedAsCollateral(userConfiguration, weth.id),
      btc: usedAsCollateral(userConfiguration, btc.id),
    },
  };
}
