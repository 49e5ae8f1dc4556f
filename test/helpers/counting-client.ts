/** A viem client on a node that records the JSON-RPC requests it sends (their methods, in order). */
import { createPublicClient, custom, http, type EIP1193RequestFn } from "viem";

export function countingClient(rpcUrl: string) {
  const inner = http(rpcUrl)({});
  const sent: string[] = [];
  const request = (async (args: { method: string; params?: unknown }) => {
    sent.push(args.method);
    return inner.request(args as never);
  }) as EIP1193RequestFn;
  // no block number cache: a test reads the block it just mined
  return { client: createPublicClient({ transport: custom({ request }), cacheTime: 0 }), sent };
}
