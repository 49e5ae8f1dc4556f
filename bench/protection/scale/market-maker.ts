/**
 * Depth for the fall: the fixture's WETH/USDC pool holds 1,000 WETH over the full range, so one Safe's
 * deleverage already meets the module's slippage bound, and fifty in one block could never sell. A market
 * maker adds a USDC-only position concentrated around the fall's price (below the pool's price before the
 * fall), as a real market has depth where it trades: the arbitrage into the fall buys WETH out of it, and the
 * deleverages of the block sell into it.
 */
import { createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import type { BaseForkNode } from "../../../fixtures/base-fork";

const NPM_ABI = parseAbi([
  "function mint((address token0, address token1, uint24 fee, int24 tickLower, int24 tickUpper, uint256 amount0Desired, uint256 amount1Desired, uint256 amount0Min, uint256 amount1Min, address recipient, uint256 deadline) params) payable returns (uint256 tokenId, uint128 liquidity, uint256 amount0, uint256 amount1)",
]);
/** the 0.05% pools' tick spacing */
const SPACING = 10;

/** the tick of `usd` per WETH in the WETH/USDC pool (token1 per token0, raw units), rounded down to the spacing */
function tickAt(usd: number, wethFirst: boolean): number {
  const raw = wethFirst ? (usd * 1e6) / 1e18 : 1e18 / (usd * 1e6);
  return Math.floor(Math.log(raw) / Math.log(1.0001) / SPACING) * SPACING;
}

/** a USDC-only position of `usdc` (atomic) between `usd` x (1 - widthPct) and `usd` x (1 + widthPct); the pool's price must be above it */
export async function deepenWethPool(fork: BaseForkNode, usd: number, widthPct: number, usdc: bigint): Promise<void> {
  const t = fork.manifest.tokens;
  const npm = fork.manifest.uniswap_v3.position_manager;
  const maker = createWalletClient({
    account: privateKeyToAccount(generatePrivateKey()),
    chain: base,
    transport: http(fork.rpcUrl),
    pollingInterval: 20,
  }).extend(publicActions);
  await fork.fund(maker.account.address, usdc);
  const wethFirst = BigInt(t.WETH) < BigInt(t.USDC);
  const ticks = [tickAt(usd * (1 - widthPct / 100), wethFirst), tickAt(usd * (1 + widthPct / 100), wethFirst)].sort((a, b) => a - b);
  const send = async (hash: `0x${string}`) => {
    if ((await maker.waitForTransactionReceipt({ hash })).status !== "success") throw new Error(`the market maker's transaction reverted (${hash})`);
  };
  await send(await maker.writeContract({ address: t.USDC, abi: ERC20_ABI, functionName: "approve", args: [npm, usdc] }));
  await send(
    await maker.writeContract({
      address: npm,
      abi: NPM_ABI,
      functionName: "mint",
      args: [
        {
          token0: wethFirst ? t.WETH : t.USDC,
          token1: wethFirst ? t.USDC : t.WETH,
          fee: 500,
          tickLower: ticks[0]!,
          tickUpper: ticks[1]!,
          amount0Desired: wethFirst ? 0n : usdc,
          amount1Desired: wethFirst ? usdc : 0n,
          amount0Min: 0n,
          amount1Min: 0n,
          recipient: maker.account.address,
          deadline: 2n ** 40n,
        },
      ],
      gas: 1_000_000n,
    }),
  );
}
