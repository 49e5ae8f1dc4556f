/**
 * Reads that must agree, made at one block number, and read again once when the node answered them with a
 * revert or an unknown block rather than not at all.
 *
 * Why: Anvil answers a call at its latest block number from the live state of the block it is mining
 * (packages/core/src/chain/anvil-reads.ts): Aave's getUserAccountData then subtracts a reserve's update time
 * (the newer block's) from the older block's time and reverts with an arithmetic underflow. Seen as
 * `503 could not read the delegation's state` on 2 to 4 of 378 delegation reads while the market mined
 * (test/managed/delegation-state.test.ts), and as 2 of 300 getUserAccountData calls at the latest block's
 * number, none of 300 at the block before it. So the second try is made once the chain has moved past the
 * first block number (waiting at most `settleMs`), at the block before the latest: the newest whose state
 * Anvil has written down. A live node's latest block is settled already; its second try is one block older.
 *
 * A node that cannot be reached (no HTTP answer, a timeout) is not asked again: its error is thrown at once.
 */
import { BaseError, HttpRequestError, SocketClosedError, TimeoutError, WebSocketRequestError, type PublicClient } from "viem";

/** true when the error is the node not answering at all (rather than answering with an error) */
export function unreachable(err: unknown): boolean {
  return (
    err instanceof BaseError &&
    Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof WebSocketRequestError || e instanceof SocketClosedError))
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** run `read` at the latest block number; if the node answered it with an error, once more at a settled block (see above) */
export async function atOneBlock<T>(
  client: Pick<PublicClient, "getBlockNumber">,
  read: (blockNumber: bigint) => Promise<T>,
  opts: { settleMs?: number; pollMs?: number } = {},
): Promise<T> {
  const first = await client.getBlockNumber({ cacheTime: 0 });
  try {
    return await read(first);
  } catch (err) {
    if (unreachable(err)) throw err;
    const deadline = Date.now() + (opts.settleMs ?? 1_000);
    let latest = await client.getBlockNumber({ cacheTime: 0 });
    while (latest <= first && Date.now() < deadline) {
      await sleep(opts.pollMs ?? 10);
      latest = await client.getBlockNumber({ cacheTime: 0 });
    }
    return read(latest > first ? latest - 1n : latest);
  }
}
