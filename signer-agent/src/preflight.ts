/**
 * Preflight on the fork before signing: the chain id matches, code exists at
 * `to` (a call to an empty address succeeds and proves nothing), the call
 * succeeds as an eth_call from the wallet (a revert is decoded and shown),
 * gas is estimated, nonce and fees are filled.
 */
import { createPublicClient, type Hex, type PublicClient } from "viem";
import { AnvilReads } from "@treasury/core/chain/anvil-reads";
import { aaveErrorOf, aaveRefusalOf, describeRevert, revertDataOf } from "@treasury/core/chain/revert";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { PreflightError } from "./errors";
import type { StepTx } from "./policy";

export { PreflightError };

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

/**
 * The preflight's refusal of a call that reverts: the reason decoded (Aave's errors by name); Aave's refusal of a
 * borrow, or of a call that would leave the position liquidatable, typed with the gateway's code for it.
 */
function reverts(err: unknown, calldata: Hex): PreflightError {
  const data = revertDataOf(err);
  const refusal = aaveRefusalOf(data, calldata);
  const reason = refusal ? `Aave refuses it, ${refusal.why} (${refusal.aaveError})` : describeRevert(err);
  return new PreflightError(`the call reverts on the fork: ${reason}`, { aaveError: aaveErrorOf(data)?.name, refusal: refusal?.code });
}

export class Preflight {
  readonly client: PublicClient;
  /** where the call is judged: on Anvil at the block the transaction will run in (the gateway's anvil-reads.ts) */
  private readonly anvilReads: AnvilReads;
  constructor(rpcUrl: string) {
    // batched: a preflight's reads go to the fork as one JSON-RPC batch (they were five rounds one after the other)
    this.client = createPublicClient({ transport: rpcHttp(rpcUrl, { retryCount: 0, batch: { wait: 0 } }), pollingInterval: 50 });
    this.anvilReads = new AnvilReads(this.client);
  }

  async prepare(tx: StepTx, from: `0x${string}`): Promise<PreparedTx> {
    const value = BigInt(tx.value);
    const at = await this.anvilReads.simulationBlock();
    // every read at once; judged in the order a refusal is explained: the chain, the code at `to`, the call's revert
    const [chainId, code, called, gas, nonce, fees] = await Promise.allSettled([
      this.client.getChainId(),
      this.client.getCode({ address: tx.to, ...at }),
      this.client.call({ account: from, to: tx.to, data: tx.data, value, ...at }),
      this.client.estimateGas({ account: from, to: tx.to, data: tx.data, value }),
      this.client.getTransactionCount({ address: from, blockTag: "pending" }),
      this.client.estimateFeesPerGas(),
    ]);
    const id = settled(chainId);
    if (id !== tx.chain_id) throw new PreflightError(`the fork answers chain ${id}, the transaction is for ${tx.chain_id}`);
    const bytecode = settled(code);
    if (!bytecode || bytecode === "0x") throw new PreflightError(`no contract at ${tx.to} on chain ${id}`);
    if (called.status === "rejected") throw reverts(called.reason, tx.data);
    const { maxFeePerGas, maxPriorityFeePerGas } = settled(fees);
    return { chainId: id, to: tx.to, data: tx.data, value, nonce: settled(nonce), gas: (settled(gas) * 12n) / 10n, maxFeePerGas, maxPriorityFeePerGas };
  }
}

/** a read's value, or its error thrown as it came (the node did not answer) */
function settled<T>(r: PromiseSettledResult<T>): T {
  if (r.status === "rejected") throw r.reason;
  return r.value;
}
