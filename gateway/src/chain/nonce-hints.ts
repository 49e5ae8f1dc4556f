/**
 * Nonce hints for envelopes: the wallet's pending transaction count on the
 * treasury's chain, read over the RPC configured for it. Without an RPC, or
 * when it does not answer in time, there is no hint (null) and the envelope says so.
 */
import { createPublicClient, type PublicClient } from "viem";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";

export class NonceHints {
  private readonly clients = new Map<string, PublicClient>();

  constructor(rpcUrls: Partial<Record<TreasuryChain, string>>, timeoutMs: number) {
    for (const [chain, url] of Object.entries(rpcUrls)) {
      if (url) this.clients.set(chain, createPublicClient({ transport: rpcHttp(url, { timeout: timeoutMs, retryCount: 0 }) }));
    }
  }

  async next(chain: TreasuryChain, address: `0x${string}`): Promise<{ nonce: number | null; source: string }> {
    const client = this.clients.get(chain);
    if (!client) return { nonce: null, source: `no RPC configured for ${chain}` };
    try {
      return { nonce: await client.getTransactionCount({ address, blockTag: "pending" }), source: `${chain} RPC, pending count` };
    } catch (err) {
      return { nonce: null, source: `${chain} RPC did not answer: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}` };
    }
  }
}
