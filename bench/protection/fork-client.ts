/**
 * A client on the fork (a fresh account, the public reads too) and what the runner reads with it: a position's
 * Aave account data, and a Safe's equity at the end, in USD at the oracle.
 */
import { createWalletClient, http, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";

const m = AAVE_MARKETS.base;
export const WAD = 10n ** 18n;

/** Aave's base currency (8 decimals, USD) as a number of USD */
export const usd = (base8: bigint) => Number(base8) / 1e8;
/** a health factor (WAD) as a number; no debt (a huge factor) reads as 100 */
export const health = (hf: bigint) => (hf > 100n * WAD ? 100 : Number(hf) / 1e18);

/** a wallet client of a new account on the fork, with the public actions */
export const forkClient = (rpcUrl: string) =>
  createWalletClient({
    account: privateKeyToAccount(generatePrivateKey()),
    chain: base,
    transport: http(rpcUrl),
    pollingInterval: 20,
  }).extend(publicActions);
export type ForkClient = ReturnType<typeof forkClient>;

/** Aave's account data of `who`: collateral and debt (base currency), health factor (WAD) */
export async function accountOf(client: ForkClient, who: `0x${string}`) {
  const [collateral, debtBase, , , , hf] = await client.readContract({
    address: m.pool,
    abi: AAVE_POOL_ABI,
    functionName: "getUserAccountData",
    args: [who],
  });
  return { collateral, debt: debtBase, hf };
}

/** collateral - debt + idle USDC and WETH, USD at `ethUsd` (the final oracle price) */
export async function equityOf(client: ForkClient, who: `0x${string}`, ethUsd: number): Promise<number> {
  const a = await accountOf(client, who);
  const [idleUsdc, idleWeth] = await Promise.all(
    [m.usdc, m.weth].map((t) => client.readContract({ address: t, abi: ERC20_ABI, functionName: "balanceOf", args: [who] })),
  );
  return usd(a.collateral) - usd(a.debt) + Number(idleUsdc!) / 1e6 + (Number(idleWeth!) / 1e18) * ethUsd;
}
