/** The asset x402 payments are made in: USDC on Base Sepolia (address and EIP-712 name from x402's chain config). */
import { getAddress } from "viem";
import { getUsdcChainConfigForChain } from "x402/shared/evm";

const baseSepolia = getUsdcChainConfigForChain(84532)!;

export const X402_ASSET = {
  address: getAddress(baseSepolia.usdcAddress as string),
  name: baseSepolia.usdcName,
  version: "2",
  decimals: 6,
} as const;
