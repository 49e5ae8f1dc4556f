/**
 * Preflight on the fork before signing: the chain id matches, code exists at
 * `to` (a call to an empty address succeeds and proves nothing), the call
 * succeeds as an eth_call from the wallet (a revert is decoded and shown),
 * gas is estimated, nonce and fees are filled.
 */
import { BaseError, ContractFunctionRevertedError, createPublicClient, http, type Hex, type PublicClient } from "viem";
import type { StepTx } from "./policy";

export class PreflightError extends Error {}

export interface PreparedTx {
  chainId: number;
  to: `0x${string}`;
  data: Hex;
  value: bigint;
  nonce: number;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

function revertReason(err: unknown): string {
  if (err instanceof BaseError) {
    const r = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    const raw = err.walk() as { reason?: string; data?: string; shortMessage?: string };
    return r?.reason ?? raw.reason ?? err.shortMessage;
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}

export class Preflight {
  readonly client: PublicClient;
  constructor(rpcUrl: string) {
    this.client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), pollingInterval: 50 });
  }

  async prepare(tx: StepTx, from: `0x${string}`): Promise<PreparedTx> {
    const chainId = await this.client.getChainId();
    if (chainId !== tx.chain_id) throw new PreflightError(`the fork answers chain ${chainId}, the transaction is for ${tx.chain_id}`);
    const code = await this.client.getCode({ address: tx.to });
    if (!code || code === "0x") throw new PreflightError(`no contract at ${tx.to} on chain ${chainId}`);
    const value = BigInt(tx.value);
    try {
      await this.client.call({ account: from, to: tx.to, data: tx.data, value });
    } catch (err) {
      throw new PreflightError(`the call reverts on the fork: ${revertReason(err)}`);
    }
    const [gas, nonce, fees] = await Promise.all([
      this.client.estimateGas({ account: from, to: tx.to, data: tx.data, value }),
      this.client.getTransactionCount({ address: from, blockTag: "pending" }),
      this.client.estimateFeesPerGas(),
    ]);
    return { chainId, to: tx.to, data: tx.data, value, nonce, gas: (gas * 12n) / 10n, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  }
}
