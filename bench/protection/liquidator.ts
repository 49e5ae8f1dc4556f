/**
 * The liquidator: Aave's own liquidationCall on any position whose health factor is under 1, with plenty of
 * USDC. Aave is the judge: a liquidation is Aave's verdict, not the runner's. What it took is tallied per Safe.
 */
import { parseAbi } from "viem";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import type { BaseForkNode } from "../../fixtures/base-fork";
import { accountOf, forkClient, WAD, type ForkClient } from "./fork-client";

const m = AAVE_MARKETS.base;
const LIQUIDATION_ABI = parseAbi([
  "function liquidationCall(address collateralAsset, address debtAsset, address user, uint256 debtToCover, bool receiveAToken)",
]);

/** what happened to one Safe over a run: its lowest health factor, the liquidations, the collateral they took beyond the debt (base currency) */
export interface SafeTally {
  lowest: number;
  liquidations: number;
  bonusLost: bigint;
}
export const newTally = (): SafeTally => ({ lowest: Number.POSITIVE_INFINITY, liquidations: 0, bonusLost: 0n });

/** a funded liquidator (USDC approved to the Pool); `liquidate` reads positions with `client` */
export async function startLiquidator(fork: BaseForkNode, client: ForkClient) {
  const liquidator = forkClient(fork.rpcUrl);
  await fork.fund(liquidator.account.address, 10_000_000n * 10n ** 6n);
  await liquidator.waitForTransactionReceipt({
    hash: await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] }),
  });
  /** liquidate `who` if its health factor is under 1, tallied `into` its Safe's outcome */
  return async (who: `0x${string}`, into: SafeTally) => {
    const before = await accountOf(client, who);
    if (before.debt === 0n || before.hf >= WAD) return;
    const hash = await liquidator.writeContract({
      address: m.pool,
      abi: LIQUIDATION_ABI,
      functionName: "liquidationCall",
      args: [m.weth, m.usdc, who, 2n ** 255n, false],
      gas: 2_000_000n,
    });
    const receipt = await liquidator.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") return;
    const after = await accountOf(client, who);
    into.liquidations++;
    into.bonusLost += before.collateral - after.collateral - (before.debt - after.debt);
  };
}
