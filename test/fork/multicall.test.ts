/**
 * Multicall3 on the fork (fixtures/base-fork.ts puts it at its canonical address without a transaction) and
 * the gateway's aggregate3 reads (gateway/src/chain/multicall.ts): chunks of one eth_call each at one block
 * number, a failing call answered alone, answers decoded in the calls' order.
 */
import { parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_ORACLE_ABI, AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { MULTICALL3_ABI, MULTICALL3_ADDRESS } from "@treasury/core/contracts/multicall3";
import { FORK_PRICES_USD, installMulticall3, type BaseForkNode } from "../../fixtures/base-fork";
import { sharedFork } from "../helpers/shared-chains";
import { aggregate3, read } from "../../gateway/src/chain/multicall";
import { countingClient } from "../helpers/counting-client";

const m = AAVE_MARKETS.base;
let fork: BaseForkNode;

beforeAll(async () => {
  fork = await sharedFork();
});
afterAll(() => fork?.stop());

describe("Multicall3 on the fork", () => {
  it("answers at its canonical address on a fresh fork, installed without a block or a transaction", async () => {
    const { client } = countingClient(fork.rpcUrl);
    const block = await client.getBlock();
    expect(await client.getCode({ address: MULTICALL3_ADDRESS })).toMatch(/^0x6080/);
    const stamp = await client.readContract({ address: MULTICALL3_ADDRESS, abi: MULTICALL3_ABI, functionName: "getCurrentBlockTimestamp" });
    expect(stamp).toBe(block.timestamp);
    // installing again finds it there and changes nothing
    await installMulticall3(fork.rpcUrl);
    expect(await client.getBlockNumber()).toBe(block.number);
    expect(block.transactions).toHaveLength(0);
  });
});

describe("aggregate3 at a block number", () => {
  it("reads every call at the block it names, one eth_call per chunk, across a chunk boundary", async () => {
    const { client, sent } = countingClient(fork.rpcUrl);
    const before = await client.getBlockNumber();
    const eth = () => read({ address: m.oracle, abi: AAVE_ORACLE_ABI, functionName: "getAssetPrice", args: [m.weth] });
    // the price moves two blocks later (Anvil writes a cheat code into the latest block's state): a read at `before` still sees the old one
    await client.request({ method: "evm_mine" as never });
    await fork.setPrice("WETH", 2_000);
    await client.request({ method: "evm_mine" as never });
    const calls = Array.from({ length: 7 }, eth);
    sent.length = 0;
    const old = await aggregate3(client, calls, { blockNumber: before, chunkSize: 3 });
    expect(sent).toEqual(["eth_call", "eth_call", "eth_call"]);
    expect(old).toEqual(Array.from({ length: 7 }, () => ({ ok: true, value: FORK_PRICES_USD.WETH * 10n ** 8n })));
    const now = await aggregate3(client, [eth(), read({ address: m.oracle, abi: AAVE_ORACLE_ABI, functionName: "getAssetPrice", args: [m.usdc] })], {
      blockNumber: before + 2n,
    });
    expect(now).toEqual([
      { ok: true, value: 2_000n * 10n ** 8n },
      { ok: true, value: 10n ** 8n },
    ]);
    await fork.setPrice("WETH", Number(FORK_PRICES_USD.WETH));
  });

  it("answers a call that fails alone when it may fail, with typed values beside it", async () => {
    const { client } = countingClient(fork.rpcUrl);
    const blockNumber = await client.getBlockNumber();
    const [reserve, missing, noCode, balance] = await aggregate3(
      client,
      [
        read({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [m.usdc] }),
        // an asset the oracle has no source for reverts
        read({
          address: m.oracle,
          abi: AAVE_ORACLE_ABI,
          functionName: "getAssetPrice",
          args: ["0x000000000000000000000000000000000000dEaD"],
          allowFailure: true,
        }),
        // an address without code answers nothing: a failure too
        read({ address: "0x000000000000000000000000000000000000dEaD", abi: ERC20_ABI, functionName: "decimals", allowFailure: true }),
        read({ address: m.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: ["0x000000000000000000000000000000000000dEaD"] }),
      ] as const,
      { blockNumber },
    );
    expect(reserve.ok && reserve.value.aTokenAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(missing.ok).toBe(false);
    expect(noCode).toEqual({ ok: false, returnData: "0x" });
    expect(balance.ok && typeof balance.value).toBe("bigint");
  });

  it("throws when a call not allowed to fail reverts (the whole chunk reverts)", async () => {
    const { client } = countingClient(fork.rpcUrl);
    const blockNumber = await client.getBlockNumber();
    const bad = read({
      address: m.oracle,
      abi: parseAbi(["function getAssetPrice(address) view returns (uint256)"]),
      functionName: "getAssetPrice",
      args: ["0x000000000000000000000000000000000000dEaD"],
    });
    await expect(aggregate3(client, [bad], { blockNumber })).rejects.toThrow(/Multicall3: call failed|reverted/);
  });
});
