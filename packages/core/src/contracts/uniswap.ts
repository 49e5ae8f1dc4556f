/**
 * Uniswap V3 SwapRouter02 (the convert route): its address per chain comes
 * from @uniswap/sdk-core; the ABI fragment is exactInputSingle.
 */
import { SWAP_ROUTER_02_ADDRESSES } from "@uniswap/sdk-core";
import { getAddress, parseAbi } from "viem";

export const SWAP_ROUTER_02_ABI = parseAbi([
  "struct ExactInputSingleParams { address tokenIn; address tokenOut; uint24 fee; address recipient; uint256 amountIn; uint256 amountOutMinimum; uint160 sqrtPriceLimitX96; }",
  "function exactInputSingle(ExactInputSingleParams params) payable returns (uint256 amountOut)",
]);

export function swapRouter02(chainId: number): `0x${string}` {
  return getAddress(SWAP_ROUTER_02_ADDRESSES(chainId));
}

/** pool fee tier used for USDC -> WETH / cbBTC / WBTC: 0.05% */
export const CONVERT_POOL_FEE = 500;
