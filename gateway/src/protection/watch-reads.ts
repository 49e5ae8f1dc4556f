/**
 * The protection engine's chain reads at one block (chain-watch.ts), each a few JSON-RPC requests
 * whatever the number of Safes:
 *
 * - `readMarket`: the market at block B (oracle prices, each reserve's normalized income and configuration,
 *   USDC's normalized variable debt): one multicall;
 * - `readPositions`: the Safes' scaled aToken balances, scaled USDC debt, collateral flags and e-mode at B:
 *   one multicall of six calls a Safe, chunked (gateway/src/chain/multicall.ts);
 * - `confirm`: Aave's own account data and the module's enablement of the Safes the trigger index names;
 * - `changedAccounts`: the accounts whose position moved in a block range: one eth_getLogs over the reserves'
 *   aTokens and variable debt tokens and the Pool.
 *
 * From `readMarket` and `readPositions` Aave's health factor is recomputed exactly as 3.6's GenericLogic does
 * it (an aToken balance is its scaled balance times the index rounded down, a debt rounded up; value = price x
 * balance / unit, the collateral's rounded down and the debt's up; HF = wadDiv(sum of value x threshold, debt)
 * / 10^4): packages/core/src/domain/aave-math.ts, used by the trigger index.
 *
 * A position the index cannot model (a supply or a debt in a reserve other than USDC, WETH and the BTC token,
 * or an e-mode category) is marked `eMode`: always a candidate, so confirmed on chain every block.
 *
 * Anvil answers a call at its latest block number from the state of the block it is mining: Aave's index reads
 * (readMarket's normalized income and debt, confirm's getUserAccountData) then revert now and then with an
 * arithmetic underflow (gateway/src/chain/one-block.ts). A caller that reads at the latest block runs these
 * under `atOneBlock`, which reads once more at a settled block.
 *
 * The reserves' tokens and ids are read once per client and chain (they are set when Aave initializes a
 * reserve and never change; an upgrade changes the implementation behind the same address).
 */
import { numberToHex, parseEventLogs, toEventSelector, type PublicClient } from "viem";
import { decodeReserveConfiguration, usedAsCollateral } from "@treasury/core/chain/market-reads";
import { AAVE_ORACLE_PRICES_ABI } from "@treasury/core/contracts/aave-oracle";
import { AAVE_POOL_ABI, AAVE_POOL_EVENTS_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_SCALED_TOKEN_ABI } from "@treasury/core/contracts/aave-tokens";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { SAFE_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { INDEX_ASSETS, type IndexAsset, type MarketAt, type WatchedPosition } from "@treasury/core/domain/trigger-index";
import { aggregate3, read, valueOf, type Read } from "../chain/multicall";
import type { ChainPosition } from "../chain/chain-gateway";

type Address = `0x${string}`;

/** the client these reads need: JSON-RPC requests only (eth_call and eth_getLogs) */
export type WatchClient = Pick<PublicClient, "request">;

/** the market's underlying token of each index asset (the chain's BTC token stands for cbBTC) */
const assetAddress = (chain: TreasuryChain, asset: IndexAsset): Address => {
  const m = AAVE_MARKETS[chain];
  return asset === "USDC" ? m.usdc : asset === "WETH" ? m.weth : m.btc;
};

/** a reserve's tokens and its id (its two bits in a user's configuration) */
export interface WatchReserve {
  asset: Address;
  aToken: Address;
  variableDebtToken: Address;
  id: number;
}

const reservesCache = new WeakMap<object, Map<TreasuryChain, Promise<Record<IndexAsset, WatchReserve>>>>();

/** the three reserves' tokens and ids, read once per client and chain (a failed read is asked again next time) */
export function watchReserves(client: WatchClient, chain: TreasuryChain, blockNumber: bigint): Promise<Record<IndexAsset, WatchReserve>> {
  let byChain = reservesCache.get(client);
  if (!byChain) reservesCache.set(client, (byChain = new Map()));
  let known = byChain.get(chain);
  if (!known) {
    const pool = AAVE_MARKETS[chain].pool;
    known = aggregate3(
      client,
      INDEX_ASSETS.map((a) => read({ address: pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [assetAddress(chain, a)] })),
      { blockNumber },
    ).then((answers) => {
      const entries = INDEX_ASSETS.map((a, i) => {
        const data = valueOf(answers[i]!, `getReserveData(${a})`);
        if (/^0x0{40}$/.test(data.aTokenAddress)) throw new Error(`${a} is not a reserve of the pool ${pool} on ${chain}`);
        return [a, { asset: assetAddress(chain, a), aToken: data.aTokenAddress, variableDebtToken: data.variableDebtTokenAddress, id: data.id }];
      });
      return Object.fromEntries(entries) as Record<IndexAsset, WatchReserve>;
    });
    byChain.set(chain, known);
    known.catch(() => byChain.delete(chain));
  }
  return known;
}

const byAsset = <T>(f: (a: IndexAsset, i: number) => T): Record<IndexAsset, T> =>
  Object.fromEntries(INDEX_ASSETS.map((a, i) => [a, f(a, i)])) as Record<IndexAsset, T>;

/** the market at `blockNumber`: one multicall of 8 calls */
export async function readMarket(client: WatchClient, chain: TreasuryChain, blockNumber: bigint): Promise<MarketAt> {
  const m = AAVE_MARKETS[chain];
  const assets = INDEX_ASSETS.map((a) => assetAddress(chain, a));
  const [prices, debtIndex, ...rest] = await aggregate3(
    client,
    [
      read({ address: m.oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetsPrices", args: [assets] }),
      read({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveNormalizedVariableDebt", args: [m.usdc] }),
      ...assets.map((asset) => read({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveNormalizedIncome", args: [asset] })),
      ...assets.map((asset) => read({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [asset] })),
    ] as const,
    { blockNumber },
  );
  const priceList = valueOf(prices, "the oracle's prices");
  const income = rest.slice(0, 3).map((o, i) => valueOf(o, `${INDEX_ASSETS[i]}'s normalized income`) as bigint);
  const configs = rest.slice(3).map((o, i) => {
    const data = valueOf(o, `${INDEX_ASSETS[i]}'s reserve data`) as { configuration: { data: bigint } };
    return decodeReserveConfiguration(data.configuration.data);
  });
  const market: MarketAt = {
    prices: byAsset((_, i) => priceList[i]!),
    liquidityIndex: byAsset((_, i) => income[i]!),
    debtIndex: valueOf(debtIndex, "USDC's normalized variable debt"),
    liquidationThresholdBps: byAsset((_, i) => configs[i]!.liquidationThresholdBps),
    decimals: byAsset((_, i) => Number(configs[i]!.decimals)),
  };
  for (const a of INDEX_ASSETS) if (market.prices[a] === 0n) throw new Error(`the oracle prices ${a} at 0 on ${chain} at block ${blockNumber}`);
  return market;
}

/** the calls of one Safe's position: three scaled aToken balances, the scaled USDC debt, its configuration, its e-mode */
const CALLS_PER_SAFE = 6;

/** a watched Safe: its treasury id, its address and its trigger (1e18 = a health factor of 1.0) */
export interface WatchedSafe {
  id: string;
  safe: Address;
  triggerWad: bigint;
}

/** the Safes' positions at `blockNumber`: one multicall, chunked (six calls a Safe) */
export async function readPositions(
  client: WatchClient,
  chain: TreasuryChain,
  blockNumber: bigint,
  safes: readonly WatchedSafe[],
  opts: { chunkSize?: number } = {},
): Promise<WatchedPosition[]> {
  if (safes.length === 0) return [];
  const reserves = await watchReserves(client, chain, blockNumber);
  const pool = AAVE_MARKETS[chain].pool;
  const scaled = (token: Address, user: Address) => read({ address: token, abi: AAVE_SCALED_TOKEN_ABI, functionName: "scaledBalanceOf", args: [user] });
  const calls: Read<unknown>[] = safes.flatMap(({ safe }) => [
    ...INDEX_ASSETS.map((a) => scaled(reserves[a].aToken, safe)),
    scaled(reserves.USDC.variableDebtToken, safe),
    read({ address: pool, abi: AAVE_POOL_ABI, functionName: "getUserConfiguration", args: [safe] }),
    read({ address: pool, abi: AAVE_POOL_ABI, functionName: "getUserEMode", args: [safe] }),
  ]);
  const answers = await aggregate3(client, calls, { blockNumber, chunkSize: opts.chunkSize });
  // the bits of a user's configuration the index models: each reserve's collateral bit, and USDC's borrowing bit
  let modelled = 1n << BigInt(reserves.USDC.id * 2);
  for (const a of INDEX_ASSETS) modelled |= 1n << BigInt(reserves[a].id * 2 + 1);
  return safes.map(({ id, safe, triggerWad }, s) => {
    const at = (k: number) => valueOf(answers[s * CALLS_PER_SAFE + k]!, `the position of ${safe}`);
    const configuration = (at(4) as { data: bigint }).data;
    const scaledCollateral: WatchedPosition["scaledCollateral"] = {};
    INDEX_ASSETS.forEach((a, k) => {
      const balance = at(k) as bigint;
      if (balance > 0n && usedAsCollateral(configuration, reserves[a].id)) scaledCollateral[a] = balance;
    });
    const position: WatchedPosition = { id, scaledCollateral, scaledDebt: at(3) as bigint, triggerWad };
    // an e-mode category, or a supply or debt elsewhere in the pool: not modelled, confirmed on chain every block
    if ((at(5) as bigint) !== 0n || (configuration & ~modelled) !== 0n) position.eMode = true;
    return position;
  });
}

/** what Aave says of an account at a block (getUserAccountData), in the gateway's ChainPosition terms */
export type ConfirmedAccount = Omit<ChainPosition, "holdings">;

/** Aave's account data and the module's enablement of each Safe at `blockNumber`: one multicall, two calls a Safe */
export async function confirm(
  client: WatchClient,
  chain: TreasuryChain,
  blockNumber: bigint,
  safes: readonly { safe: Address; module: Address }[],
  opts: { chunkSize?: number } = {},
): Promise<{ account: ConfirmedAccount; moduleEnabled: boolean }[]> {
  const pool = AAVE_MARKETS[chain].pool;
  const answers = await aggregate3(
    client,
    safes.flatMap(({ safe, module }) => [
      read({ address: pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [safe] }),
      // a Safe without code (or not a Safe) enables nothing
      read({ address: safe, abi: SAFE_MODULE_ABI, functionName: "isModuleEnabled", args: [module], allowFailure: true }),
    ]),
    { blockNumber, chunkSize: opts.chunkSize },
  );
  return safes.map(({ safe }, s) => {
    const [collateralBase, debtBase, , liquidationThreshold, , healthFactor] = valueOf(answers[2 * s]!, `the account of ${safe}`) as readonly bigint[];
    const enabled = answers[2 * s + 1]!;
    return {
      account: {
        collateralMicro: collateralBase! / 100n,
        debtMicro: debtBase! / 100n,
        collateralBase: collateralBase!,
        debtBase: debtBase!,
        liquidationThresholdBps: Number(liquidationThreshold),
        healthFactorWad: healthFactor!,
        blockNumber,
      },
      moduleEnabled: enabled.ok && enabled.value === true,
    };
  });
}

/** the events that name the account whose position they change, and which of their arguments names it */
const ACCOUNT_ARGS: Record<string, readonly string[]> = {
  Transfer: ["from", "to"],
  BalanceTransfer: ["from", "to"],
  Mint: ["onBehalfOf"],
  Burn: ["from"],
  ReserveUsedAsCollateralEnabled: ["user"],
  ReserveUsedAsCollateralDisabled: ["user"],
  UserEModeSet: ["user"],
  LiquidationCall: ["user"],
};

const WATCH_EVENTS_ABI = [...AAVE_SCALED_TOKEN_ABI, ...AAVE_POOL_EVENTS_ABI];

/**
 * The accounts (lowercase) whose position changed in blocks `fromBlock` to `toBlock` (both included): one
 * eth_getLogs of the three reserves' aTokens and variable debt tokens (supply, withdraw, borrow, repay, a
 * transfer of aTokens, a liquidation) and of the Pool (collateral flags, e-mode, liquidation). The zero address
 * (a mint's or a burn's other side) is never named. A position elsewhere in the pool is marked `eMode` by
 * `readPositions` and confirmed every block, so its events are not needed here.
 */
export async function changedAccounts(client: WatchClient, chain: TreasuryChain, fromBlock: bigint, toBlock: bigint): Promise<Set<string>> {
  const changed = new Set<string>();
  if (toBlock < fromBlock) return changed;
  const reserves = await watchReserves(client, chain, toBlock);
  const addresses = [AAVE_MARKETS[chain].pool, ...INDEX_ASSETS.flatMap((a) => [reserves[a].aToken, reserves[a].variableDebtToken])];
  const topics = Object.keys(ACCOUNT_ARGS).flatMap((name) =>
    WATCH_EVENTS_ABI.filter((e) => e.type === "event" && e.name === name).map((e) => toEventSelector(e)),
  );
  const logs = (await client.request({
    method: "eth_getLogs",
    params: [{ address: addresses, topics: [[...new Set(topics)]], fromBlock: numberToHex(fromBlock), toBlock: numberToHex(toBlock) }],
  })) as Parameters<typeof parseEventLogs>[0]["logs"];
  for (const log of parseEventLogs({ abi: WATCH_EVENTS_ABI, logs, strict: false })) {
    const args = log.args as Record<string, unknown>;
    for (const key of ACCOUNT_ARGS[log.eventName] ?? []) {
      const who = args[key];
      if (typeof who === "string" && !/^0x0{40}$/.test(who)) changed.add(who.toLowerCase());
    }
  }
  return changed;
}
