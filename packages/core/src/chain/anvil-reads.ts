/**
 * Reads on an Anvil node while it mines. Anvil can answer a call at `latest` with the state of the block it is
 * mining and the previous block's timestamp (also at the latest block's number, which it serves from the same
 * live state): Aave's reads then subtract a reserve's last update (the newer block's time) from the older time
 * and revert with an arithmetic underflow. Measured on the sandbox's fork: 3-9 of 120 relays of 40 wallets at
 * once refused ("would revert: 17", "could not read the treasury's position"); 8 of about 340 position reads
 * failing beside concurrent supplies.
 *
 * - A simulation (will this transaction revert?) is made at `pending` on Anvil: the block the transaction will
 *   run in, whose time is never older than the state it reads (none of 360 concurrent relays refused).
 * - A position is read at `latest` (at `pending` it would show the next block's interest: 15,000.000001 USDC
 *   of debt just borrowed) and, on Anvil, read once more when it reverts: the next read comes after the block.
 *
 * A live node's `latest` is one block's state and time: its reads stay at `latest`, asked once. Used by the
 * gateway's chain reads (chain-gateway.ts) and the signer agent's preflight.
 */
import { BaseError, ContractFunctionRevertedError, type PublicClient } from "viem";

export class AnvilReads {
  /** is the node Anvil (asked once; a node that did not answer is asked again next time) */
  private anvil?: Promise<boolean>;

  constructor(private readonly client: Pick<PublicClient, "request">) {}

  isAnvil(): Promise<boolean> {
    if (!this.anvil) {
      const asked = this.client
        .request({ method: "web3_clientVersion" } as never)
        .then((v: unknown) => typeof v === "string" && v.toLowerCase().startsWith("anvil"));
      this.anvil = asked;
      asked.catch(() => (this.anvil = undefined));
    }
    return this.anvil.catch(() => false);
  }

  /** where a simulation is made: `{ blockTag: "pending" }` on Anvil, `{}` (latest) elsewhere */
  async simulationBlock(): Promise<{ blockTag?: "pending" }> {
    return (await this.isAnvil()) ? { blockTag: "pending" } : {};
  }

  /** run reads that must agree; on Anvil, once more if they reverted */
  async consistent<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError)) || !(await this.isAnvil())) throw err;
      return read();
    }
  }
}
