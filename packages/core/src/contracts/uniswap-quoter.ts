/**
 * Uniswap V3 QuoterV2: what a swap would return, asked with eth_call (its
 * quote functions are not view: they run the swap and revert with the result).
 * QuoterV2 takes a struct and returns (amountOut, sqrtPriceX96After,
 * initializedTicksCrossed, gasEstimate); QuoterV1 takes flat arguments and
 * returns amountOut alone, so the two must not be confused.
 */
import { CHAIN_TO_ADDRESSES_MAP } from "@uniswap/sdk-core";
import { getAddress, parseAbi } from "viem";

export const QUOTER_V2_ABI = parseAbi([
  "struct QuoteExactInputSingleParams { address tokenIn; address tokenOut; uint256 amountIn; uint24 fee; uint160 sqrtPriceLimitX96; }",
  "struct QuoteExactOutputSingleParams { address tokenIn; address tokenOut; uint256 amount; uint24 fee; uint160 sqrtPriceLimitX96; }",
  "function quoteExactInputSingle(QuoteExactInputSingleParams params) returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  "function quoteExactOutputSingle(QuoteExactOutputSingleParams params) returns (uint256 amountIn, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  "function factory() view returns (address)",
  "function WETH9() view returns (address)",
]);

/**
 * Chains whose @uniswap/sdk-core `quoterAddress` is QuoterV2. On Base it is (0x3d4e44Eb...B76a); on Ethereum
 * and Arbitrum it is QuoterV1 (0xb27308f9...5AB6), whose interface differs: they are not listed.
 */
const SDK_QUOTER_IS_V2 = new Set([8453]);

/** QuoterV2's address on a chain (throws for a chain whose known quoter is not QuoterV2) */
export function quoterV2(chainId: number): `0x${string}` {
  const entry = (CHAIN_TO_ADDRESSES_MAP as Record<number, { quoterAddress?: string } | undefined>)[chainId];
  if (!SDK_QUOTER_IS_V2.has(chainId) || !entry?.quoterAddress) throw new Error(`no known Uniswap QuoterV2 on chain ${chainId}`);
  return getAddress(entry.quoterAddress);
}
