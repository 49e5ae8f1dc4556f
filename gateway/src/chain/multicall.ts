/**
 * Many view calls at one block, through Multicall3's aggregate3 (packages/core/src/contracts/multicall3.ts):
 * a call is declared with `read` (its ABI, function and arguments; whether it may fail alone), the calls go
 * in chunks of at most `chunkSize`, ONE eth_call (one JSON-RPC request) per chunk, every chunk at the same
 * block number, and each answer comes back decoded by viem's decodeFunctionResult in the calls' order.
 *
 * A call allowed to fail answers `{ ok: false }` with its revert data (or undecodable return data) and the
 * others go on; a call not allowed to fail makes its whole chunk revert ("Multicall3: call failed"), which
 * throws here as the eth_call's error. The block number pins every chunk to one state: results of two
 * chunks never mix two blocks.
 */
import {
  decodeFunctionResult,
  encodeFunctionData,
  numberToHex,
  type Abi,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  type Hex,
  type PublicClient,
} from "viem";
import { MULTICALL3_ABI, MULTICALL3_ADDRESS } from "@treasury/core/contracts/multicall3";

/** calls per eth_call: aggregate3 of 300 view calls stays well under a node's call gas cap */
export const MULTICALL_CHUNK = 300;

/** one call of an aggregate3, with the decoder of its answer */
export interface Read<T> {
  target: `0x${string}`;
  callData: Hex;
  allowFailure: boolean;
  decode(data: Hex): T;
}

/** a call's answer: its decoded value, or its failure (revert data, or return data that did not decode) */
export type Outcome<T> = { ok: true; value: T } | { ok: false; returnData: Hex };

type ViewName<abi extends Abi> = ContractFunctionName<abi, "view" | "pure">;

/** declare a view call (typed like viem's readContract); `allowFailure` true: it may fail alone */
export function read<const abi extends Abi, name extends ViewName<abi>, const args extends ContractFunctionArgs<abi, "view" | "pure", name>>(call: {
  address: `0x${string}`;
  abi: abi;
  functionName: name;
  args?: args;
  allowFailure?: boolean;
}): Read<ContractFunctionReturnType<abi, "view" | "pure", name, args>> {
  const { address, abi, functionName, args } = call;
  return {
    target: address,
    callData: encodeFunctionData({ abi, functionName, args } as never),
    allowFailure: call.allowFailure ?? false,
    decode: (data) => decodeFunctionResult({ abi, functionName, args, data } as never) as ContractFunctionReturnType<abi, "view" | "pure", name, args>,
  };
}

/** the outcomes of a tuple (or array) of reads, position for position */
export type Outcomes<R extends readonly Read<unknown>[]> = { [K in keyof R]: R[K] extends Read<infer T> ? Outcome<T> : never };

/**
 * Every read at `blockNumber`, in chunks of `chunkSize` (one eth_call each, sent together). A read not allowed
 * to fail whose answer does not decode throws; the eth_call's own errors (unreachable node, a chunk reverted
 * by a call not allowed to fail, an unknown block) are thrown as viem raised them.
 */
export async function aggregate3<const R extends readonly Read<unknown>[]>(
  client: Pick<PublicClient, "request">,
  reads: R,
  at: { blockNumber: bigint; chunkSize?: number },
): Promise<Outcomes<R>> {
  const size = at.chunkSize ?? MULTICALL_CHUNK;
  if (size < 1) throw new RangeError(`chunkSize must be at least 1 (got ${size})`);
  const chunks: Read<unknown>[][] = [];
  for (let i = 0; i < reads.length; i += size) chunks.push(reads.slice(i, i + size));
  const block = numberToHex(at.blockNumber);
  const answered = await Promise.all(
    chunks.map(async (chunk) => {
      const data = encodeFunctionData({
        abi: MULTICALL3_ABI,
        functionName: "aggregate3",
        args: [chunk.map((r) => ({ target: r.target, allowFailure: r.allowFailure, callData: r.callData }))],
      });
      const raw = (await client.request({ method: "eth_call", params: [{ to: MULTICALL3_ADDRESS, data }, block] })) as Hex;
      return decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: "aggregate3", data: raw });
    }),
  );
  return answered.flat().map((r, i) => decodeOne(reads[i]!, r.success, r.returnData)) as Outcomes<R>;
}

function decodeOne<T>(read: Read<T>, success: boolean, returnData: Hex): Outcome<T> {
  if (success) {
    try {
      return { ok: true, value: read.decode(returnData) };
    } catch (err) {
      // a call to an address without code "succeeds" with no data: a failure like a revert
      if (!read.allowFailure) throw new Error(`the answer of ${read.target} (${read.callData.slice(0, 10)}) did not decode`, { cause: err });
    }
  }
  return { ok: false, returnData };
}

/** the value of an outcome that must have succeeded (a read allowed to fail whose failure the caller cannot use) */
export function valueOf<T>(outcome: Outcome<T>, what: string): T {
  if (!outcome.ok) throw new Error(`${what} failed (${outcome.returnData.slice(0, 10)})`);
  return outcome.value;
}
