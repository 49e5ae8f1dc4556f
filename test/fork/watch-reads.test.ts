/**
 * The protection engine's chain reads (gateway/src/protection/watch-reads.ts) on the fork, for real Safes with
 * Aave positions: the market and the positions read at one block give Aave's own health factor exactly
 * (recomputed as GenericLogic does, compared with getUserAccountData at the same block), the logs of a block
 * range name a watched Safe for each way its position moves and nothing in a quiet block, and every read is
 * one JSON-RPC request a chunk.
 */
import { encodeFunctionData, type PublicClient } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import type { IndexAsset, MarketAt, WatchedPosition } from "@treasury/core/domain/trigger-index";
import { FORK_RISK, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { INDEX_ASSETS } from "@treasury/core/domain/trigger-index";
import { changedAccounts, confirm, readMarket, readPositions, watchReserves } from "../../gateway/src/protection/watch-reads";
import { Operator } from "../../signer-agent/src/operator";
import { atOneBlock } from "../../gateway/src/chain/one-block";
import { busyMarket } from "../helpers/busy-market";
import { countingClient } from "../helpers/counting-client";

const m = AAVE_MARKETS.base;
const WAD = 10n ** 18n;
const RAY = 10n ** 27n;
const DEAD = "0x000000000000000000000000000000000000dEaD" as const;

let fork: BaseForkNode;
let operator: Operator;
let safe: `0x${string}`;
let rpc: ReturnType<typeof countingClient>;

/**
 * Aave 3.6's GenericLogic.calculateUserAccountData, for positions without e-mode, written out apart from the
 * core's: aToken balances rayMulFloor, the debt rayMulCeil then mulDivCeil into base currency, HF = wadDiv(Σ C_i LT_i,
 * D) / 10^4 (3.0's half-up rayMul, floored debt and percentMul of a floored average threshold read a few 1e-4 off)
 */
function aaveHealthWad(p: WatchedPosition, at: MarketAt): bigint {
  const ceil = (a: bigint, b: bigint) => (a + b - 1n) / b;
  let weighted = 0n;
  for (const a of Object.keys(p.scaledCollateral) as IndexAsset[]) {
    const value = (((p.scaledCollateral[a]! * at.liquidityIndex[a]) / RAY) * at.prices[a]) / 10n ** BigInt(at.decimals[a]);
    weighted += value * at.liquidationThresholdBps[a];
  }
  const debt = ceil(ceil(p.scaledDebt * at.debtIndex, RAY) * at.prices.USDC, 10n ** BigInt(at.decimals.USDC));
  if (debt === 0n) return 2n ** 256n - 1n;
  return (weighted * WAD + debt / 2n) / debt / 10_000n;
}

const mine = (seconds = 0) =>
  fork.rpcUrl &&
  (async () => {
    if (seconds > 0) await rpc.client.request({ method: "evm_increaseTime" as never, params: [seconds] as never });
    await rpc.client.request({ method: "evm_mine" as never });
  })();

beforeAll(async () => {
  fork = await startBaseFork();
  rpc = countingClient(fork.rpcUrl);
  operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(10n * WAD);
  await operator.supplyAndBorrow(10n * WAD, 15_000n * 10n ** 6n);
  // USDC supplied too: two collaterals of different thresholds, so the weighted threshold's rounding counts
  await operator.execSafe([
    { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2_345_678_901n] }) },
    { to: m.pool, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [m.usdc, 2_345_678_901n, safe, 0] }) },
  ]);
}, 120_000);
afterAll(() => fork?.stop());

describe("readMarket and readPositions", () => {
  it("give Aave's health factor exactly, at one block, as interest accrues and prices move", async () => {
    const client = rpc.client as PublicClient;
    const seen: bigint[] = [];
    for (const step of [{ days: 0 }, { days: 37, eth: 2_400 }, { days: 400, eth: 1_900.5 }]) {
      if (step.eth) await fork.setPrice("WETH", step.eth);
      await mine(step.days * 86_400);
      const blockNumber = await client.getBlockNumber();
      const [market, [position]] = await Promise.all([
        readMarket(client, "base", blockNumber),
        readPositions(client, "base", blockNumber, [{ id: "t1", safe, triggerWad: 13n * 10n ** 17n }]),
      ]);
      expect(position).toMatchObject({ id: "t1", triggerWad: 13n * 10n ** 17n });
      expect(position!.eMode).toBeUndefined();
      expect(Object.keys(position!.scaledCollateral).sort()).toEqual(["USDC", "WETH"]);
      const [confirmed] = await confirm(client, "base", blockNumber, [{ safe, module: DEAD }]);
      const { account, moduleEnabled } = confirmed!;
      expect(moduleEnabled).toBe(false);
      expect(account.blockNumber).toBe(blockNumber);
      expect(aaveHealthWad(position!, market)).toBe(account.healthFactorWad);
      seen.push(account.healthFactorWad);
    }
    // the steps moved the health factor (interest and the price), each step recomputed exactly
    expect(new Set(seen).size).toBe(3);
    await fork.setPrice("WETH", 3_000);
  });

  it("reads six calls a Safe, one eth_call per chunk", async () => {
    const client = rpc.client as PublicClient;
    const blockNumber = await client.getBlockNumber();
    await watchReserves(client, "base", blockNumber);
    const safes = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, safe: i % 2 ? safe : DEAD, triggerWad: WAD }));
    rpc.sent.length = 0;
    const positions = await readPositions(client, "base", blockNumber, safes, { chunkSize: 25 });
    expect(rpc.sent).toEqual(["eth_call", "eth_call", "eth_call"]); // 60 calls in chunks of 25
    expect(positions.map((p) => p.id)).toEqual(safes.map((s) => s.id));
    expect(positions[0]).toEqual({ id: "t0", scaledCollateral: {}, scaledDebt: 0n, triggerWad: WAD });
    expect(positions[1]!.scaledDebt).toBeGreaterThan(0n);
    rpc.sent.length = 0;
    const market = await readMarket(client, "base", blockNumber);
    expect(rpc.sent).toEqual(["eth_call"]);
    expect(market.decimals).toEqual({ USDC: 6, WETH: 18, cbBTC: 8 });
    expect(market.liquidationThresholdBps).toEqual({
      USDC: BigInt(FORK_RISK.USDC.liquidationThresholdBps),
      WETH: BigInt(FORK_RISK.WETH.liquidationThresholdBps),
      cbBTC: BigInt(FORK_RISK.cbBTC.liquidationThresholdBps),
    });
    for (const a of INDEX_ASSETS) expect(market.liquidityIndex[a]).toBeGreaterThanOrEqual(RAY);
  });
});

describe("reads at the latest block while the market mines", () => {
  it("answer every time under atOneBlock (Anvil's index reads revert now and then at the block it is mining)", async () => {
    const client = rpc.client as PublicClient;
    const stop = await busyMarket(fork);
    const answered: bigint[] = [];
    try {
      for (let i = 0; i < 150; i++) {
        const [market, [confirmed]] = await atOneBlock(client, (blockNumber) =>
          Promise.all([readMarket(client, "base", blockNumber), confirm(client, "base", blockNumber, [{ safe, module: DEAD }])]),
        );
        expect(market.debtIndex).toBeGreaterThanOrEqual(RAY);
        answered.push(confirmed!.account.blockNumber);
      }
    } finally {
      await stop();
    }
    expect(answered).toHaveLength(150);
    // the market moved on under the reads
    expect(answered.at(-1)! - answered[0]!).toBeGreaterThan(10n);
  });
});

describe("changedAccounts", () => {
  const execAndRange = async (calls: { to: `0x${string}`; data: `0x${string}` }[]) => {
    const from = (await rpc.client.getBlockNumber()) + 1n;
    await operator.execSafe(calls);
    return { from, to: await rpc.client.getBlockNumber() };
  };
  const pool = (data: `0x${string}`) => ({ to: m.pool, data });

  it("names the Safe for a supply, a borrow, a repay, a withdrawal and an aToken transfer, in one eth_getLogs each", async () => {
    const client = rpc.client as PublicClient;
    const reserves = await watchReserves(client, "base", await client.getBlockNumber());
    const moves: Record<string, { to: `0x${string}`; data: `0x${string}` }[]> = {
      supply: [
        { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, 1_000_000n] }) },
        pool(encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [m.usdc, 1_000_000n, safe, 0] })),
      ],
      borrow: [pool(encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [m.usdc, 5_000_000n, 2n, 0, safe] }))],
      repay: [
        { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, 3_000_000n] }) },
        pool(encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [m.usdc, 3_000_000n, 2n, safe] })),
      ],
      withdraw: [pool(encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [m.weth, 10n ** 17n, safe] }))],
      aTokenTransfer: [{ to: reserves.WETH.aToken, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [DEAD, 10n ** 16n] }) }],
    };
    for (const [move, calls] of Object.entries(moves)) {
      const { from, to } = await execAndRange(calls);
      rpc.sent.length = 0;
      const changed = await changedAccounts(client, "base", from, to);
      expect(rpc.sent, move).toEqual(["eth_getLogs"]);
      expect(changed.has(safe.toLowerCase()), move).toBe(true);
      if (move === "aTokenTransfer") expect(changed.has(DEAD.toLowerCase())).toBe(true);
    }
  });

  it("names nothing for a quiet block, nor for a block where only others' tokens moved", async () => {
    const client = rpc.client as PublicClient;
    await mine();
    const quiet = await client.getBlockNumber();
    expect(await changedAccounts(client, "base", quiet, quiet)).toEqual(new Set());
    await fork.fund(DEAD, 1_000_000n); // a USDC mint: the underlying, not Aave's tokens
    const minted = await client.getBlockNumber();
    expect(await changedAccounts(client, "base", minted, minted)).toEqual(new Set());
  });
});
