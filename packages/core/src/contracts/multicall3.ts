/**
 * Multicall3 (github.com/mds1/multicall): many view calls in one eth_call, each allowed to fail on its own
 * (aggregate3). The one declaration of its address: the same on every chain the service knows (Base,
 * Arbitrum, Ethereum deployed it at 0xcA11…CA11 with a presigned transaction), and the fork fixture puts it
 * there when missing (fixtures/base-fork.ts).
 */
import { multicall3Abi } from "viem";

export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;

/** Multicall3's ABI as viem ships it (aggregate3, getEthBalance, getCurrentBlockTimestamp) */
export const MULTICALL3_ABI = multicall3Abi;
