/**
 * packages/core/src/domain/trigger-index.ts and aave-math.ts against the Pool of the offline Base fork (Aave 3.6): a
 * position with WETH, cbBTC and USDC collateral and USDC debt, after a month of interest at high utilization and prices
 * moved apart, has the health factor, collateral, debt and average LTV and threshold getUserAccountData answers, to
 * the wei, its balances are the tokens' own, the indexes accrue as the Pool accrues them, and it is a candidate
 * exactly around its health factor.
 */
import { createPublicClient, createTestClient, createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_ORACLE_PRICES_ABI } from "@treasury/core/contracts/aave-oracle";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { accountData, aTokenBalance, normalizedDebt, normalizedIncome, RAY, vTokenBalance } from "@treasury/core/domain/aave-math";
import { TriggerIndex, type IndexAsset, type MarketAt } from "@treasury/core/domain/trigger-index";
import { FORK_RISK, type BaseForkNode } from "../../fixtures/base-fork";
import { sharedFork } from "../helpers/shared-chains";

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;
const TOKEN_ABI = parseAbi(["function deposit() payable", "function mint(address account, uint256 value) returns (bool)"]);
const READS_ABI = parseAbi([
  "function scaledBalanceOf(address user) view returns (uint256)",
  "function getReserveNormalizedIncome(address asset) view returns (uint256)",
  "function getReserveNormalizedVariableDebt(address asset) view returns (uint256)",
]);
const ASSETS: IndexAsset[] = ["USDC", "WETH", "cbBTC"];

let fork: BaseForkNode;
beforeAll(async () => {
  fork = await sharedFork();
});
afterAll(() => fork?.stop());

async function funded() {
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
    const hash = await wallet.writeContract({ address, abi, functionName, args, value } as never);
    expect((await wallet.waitForTransactionReceipt({ hash })).status, functionName).toBe("success");
  };
  return { account, send };
}

it("healthWad is the Pool's health factor to the wei, with interest accrued and ETH and BTC apart; candidates around it", async () => {
  const { manifest: m } = fork;
  const pool = m.aave.pool;
  const reader = createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
  const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });

  // 1 WETH, 0.05 cbBTC and 100 USDC supplied (each enabled as collateral on its first supply), 2,500 USDC borrowed
  const { account, send } = await funded();
  await fork.fund(account.address, 100n * E6);
  await send(m.tokens.USDC, ERC20_ABI, "approve", [pool, 100n * E6]);
  await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.USDC, 100n * E6, account.address, 0]);
  await send(m.tokens.WETH, TOKEN_ABI, "deposit", [], E18);
  await send(m.tokens.WETH, ERC20_ABI, "approve", [pool, E18]);
  await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.WETH, E18, account.address, 0]);
  await send(m.tokens.cbBTC, TOKEN_ABI, "mint", [account.address, 5_000_000n]);
  await send(m.tokens.cbBTC, ERC20_ABI, "approve", [pool, 5_000_000n]);
  await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.cbBTC, 5_000_000n, account.address, 0]);
  await send(pool, AAVE_POOL_ABI, "borrow", [m.tokens.USDC, 2_500n * E6, 2n, 0, account.address]);

  // a whale takes most of the USDC (high utilization), a month passes, ETH falls and BTC rises
  const whale = await funded();
  await test.setBalance({ address: whale.account.address, value: 3_000n * E18 });
  await whale.send(m.tokens.WETH, TOKEN_ABI, "deposit", [], 2_000n * E18);
  await whale.send(m.tokens.WETH, ERC20_ABI, "approve", [pool, 2_000n * E18]);
  await whale.send(pool, AAVE_POOL_ABI, "supply", [m.tokens.WETH, 2_000n * E18, whale.account.address, 0]);
  await whale.send(pool, AAVE_POOL_ABI, "borrow", [m.tokens.USDC, 4_000_000n * E6, 2n, 0, whale.account.address]);
  await fork.setPrice("WETH", 2_345.67);
  await fork.setPrice("cbBTC", 66_789.01);
  const { timestamp } = await reader.getBlock();
  await test.setNextBlockTimestamp({ timestamp: timestamp + 30n * 24n * 3600n });
  await test.mine({ blocks: 1 });
  const blockNumber = await reader.getBlockNumber();

  const read = (address: `0x${string}`, abi: any, functionName: string, args: unknown[]) =>
    reader.readContract({ address, abi, functionName, args, blockNumber } as never) as Promise<bigint>;
  const each = async (f: (a: IndexAsset) => Promise<bigint>) =>
    Object.fromEntries(await Promise.all(ASSETS.map(async (a) => [a, await f(a)]))) as Record<IndexAsset, bigint>;
  const market: MarketAt = {
    prices: await each((a) => read(m.aave.oracle, AAVE_ORACLE_PRICES_ABI, "getAssetPrice", [m.tokens[a]])),
    liquidityIndex: await each((a) => read(pool, READS_ABI, "getReserveNormalizedIncome", [m.tokens[a]])),
    debtIndex: await read(pool, READS_ABI, "getReserveNormalizedVariableDebt", [m.tokens.USDC]),
    liquidationThresholdBps: await each(async (a) => BigInt(FORK_RISK[a].liquidationThresholdBps)),
    decimals: { USDC: 6, WETH: 18, cbBTC: 8 },
  };
  const scaled = await each((a) => read(m.reserves[a].a_token, READS_ABI, "scaledBalanceOf", [account.address]));
  const scaledDebt = await read(m.reserves.USDC.variable_debt_token, READS_ABI, "scaledBalanceOf", [account.address]);
  const [collateralBase, debtBase, , liquidationThreshold, ltv, healthFactor] = (await reader.readContract({
    address: pool,
    abi: AAVE_POOL_ABI,
    functionName: "getUserAccountData",
    args: [account.address],
    blockNumber,
  })) as readonly bigint[];

  // interest accrued on both sides; the indexes are not one ray
  expect(market.debtIndex).toBeGreaterThan(10n ** 27n + 10n ** 24n);
  expect(market.liquidityIndex.USDC).toBeGreaterThan(10n ** 27n + 10n ** 24n);
  const position = { id: "fork", scaledCollateral: scaled, scaledDebt, triggerWad: healthFactor! };
  const index = new TriggerIndex();
  index.upsert(position, market);
  expect(index.healthWad("fork", market)).toBe(healthFactor);
  console.log(`fork position: health factor ${healthFactor} (Pool) = ${index.healthWad("fork", market)} (index)`);

  // the whole account as 3.6 computes it (TokenMath's floor and ceiling, mulDivCeil, the floored averages)
  const computed = accountData(
    ASSETS.map((a) => ({
      scaledCollateral: scaled[a],
      scaledDebt: a === "USDC" ? scaledDebt : 0n,
      liquidityIndex: market.liquidityIndex[a],
      debtIndex: market.debtIndex,
      price: market.prices[a],
      decimals: market.decimals[a],
      ltvBps: BigInt(FORK_RISK[a].ltvBps),
      liquidationThresholdBps: BigInt(FORK_RISK[a].liquidationThresholdBps),
    })),
  );
  expect([computed.totalCollateralBase, computed.totalDebtBase, computed.ltvBps, computed.liquidationThresholdBps, computed.healthFactorWad]).toEqual([
    collateralBase,
    debtBase,
    ltv,
    liquidationThreshold,
    healthFactor,
  ]);
  // the tokens' balances: aToken rounded down, debt rounded up
  const balance = (token: `0x${string}`) => read(token, ERC20_ABI, "balanceOf", [account.address]);
  for (const a of ASSETS) expect(await balance(m.reserves[a].a_token)).toBe(aTokenBalance(scaled[a], market.liquidityIndex[a]));
  const debt = await balance(m.reserves.USDC.variable_debt_token);
  expect(debt).toBe(vTokenBalance(scaledDebt, market.debtIndex));
  expect(debt).toBe((scaledDebt * market.debtIndex) / RAY + 1n); // not an exact multiple: rounded up
  // the indexes a month on, from the reserve's stored state: linear income, compounded debt (MathUtils)
  const { timestamp: now } = await reader.getBlock({ blockNumber });
  for (const a of ASSETS) {
    const r = (await reader.readContract({ address: pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [m.tokens[a]], blockNumber })) as {
      liquidityIndex: bigint;
      variableBorrowIndex: bigint;
      currentLiquidityRate: bigint;
      currentVariableBorrowRate: bigint;
      lastUpdateTimestamp: number;
    };
    const stored = { ...r, lastUpdateTimestamp: BigInt(r.lastUpdateTimestamp) };
    expect(now - stored.lastUpdateTimestamp).toBeGreaterThanOrEqual(30n * 24n * 3600n);
    expect(normalizedIncome(stored, now)).toBe(market.liquidityIndex[a]);
    if (a === "USDC") expect(normalizedDebt(stored, now)).toBe(market.debtIndex);
  }

  // at its trigger it is not under it; one wei above, it is a candidate; 0.1% below its health factor, not one
  expect(index.candidates(market)).toEqual(["fork"]); // within the bound's band (one basis point of the average threshold)
  index.upsert({ ...position, triggerWad: healthFactor! + 1n }, market);
  expect(index.candidates(market)).toEqual(["fork"]);
  index.upsert({ ...position, triggerWad: (healthFactor! * 999n) / 1000n }, market);
  expect(index.candidates(market)).toEqual([]);
});
