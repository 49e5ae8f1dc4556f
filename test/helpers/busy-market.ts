/**
 * Another user of the fork's Aave market supplying USDC block after block until stopped: every block updates
 * the USDC reserve's indexes and time, as a busy market does (reads at the latest block then meet Anvil
 * mining the next one: gateway/src/chain/one-block.ts).
 */
import { createWalletClient, http, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import type { BaseForkNode } from "../../fixtures/base-fork";

/** start supplying; the answer stops it (after the supply under way lands) */
export async function busyMarket(fork: BaseForkNode): Promise<() => Promise<void>> {
  const m = AAVE_MARKETS.base;
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address, 10n ** 12n);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 5 }).extend(publicActions);
  await wallet.waitForTransactionReceipt({
    hash: await wallet.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 10n ** 12n] }),
  });
  let running = true;
  const loop = (async () => {
    while (running) {
      const hash = await wallet.writeContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "supply", args: [m.usdc, 1_000_000n, account.address, 0] });
      await wallet.waitForTransactionReceipt({ hash });
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
