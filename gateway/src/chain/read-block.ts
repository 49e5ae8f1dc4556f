/**
 * The block a read of several calls that must agree is made at. Anvil answers a call at `latest` (or at the
 * latest block's number, which it serves from the same live state) while it mines with the state of the block
 * being mined and the previous block's timestamp: Aave's reads then take a reserve's last update (the newer
 * block's time) from the older time and revert with an arithmetic underflow (measured on the sandbox's fork:
 * 3-9 of 120 relays of 40 wallets at once refused with "would revert: 17" or "could not read the treasury's
 * position"; still 1 of 120 when pinned to the block number asked just before). At `pending` the block's time is
 * the next one's, never older than the state it reads. So on Anvil (the sandbox's fork, the tests' chains)
 * such reads are made at `pending`, where the node mines every transaction as it comes (the pending state is the
 * latest one plus what it is mining); a live node's `latest` is one block's state and time, and its reads stay
 * there. Used by the gateway's chain reads (chain-gateway.ts) and the signer agent's preflight.
 */
import type { PublicClient } from "viem";

export class ReadBlock {
  /** is the node Anvil (asked once; a node that did not answer is asked again next time) */
  private anvil?: Promise<boolean>;

  constructor(private readonly client: Pick<PublicClient, "request">) {}

  /** `{ blockTag: "pending" }` on Anvil, `{}` (latest) elsewhere */
  async at(): Promise<{ blockTag?: "pending" }> {
    if (!this.anvil) {
      const asked = this.client.request({ method: "web3_clientVersion" } as never).then((v: unknown) => typeof v === "string" && v.toLowerCase().startsWith("anvil"));
      this.anvil = asked;
      asked.catch(() => (this.anvil = undefined));
    }
    return (await this.anvil.catch(() => false)) ? { blockTag: "pending" } : {};
  }
}
