/** The EIP-3009 token calls the local facilitator reads and sends, and how a node says a nonce is taken. */
import { BaseError, NonceTooLowError, parseSignature, type Hex } from "viem";

export const TOKEN_ABI = [
  { type: "function", name: "name", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "authorizationState", stateMutability: "view", inputs: [{ type: "address" }, { type: "bytes32" }], outputs: [{ type: "bool" }] },
  {
    type: "event",
    name: "AuthorizationUsed",
    inputs: [
      { name: "authorizer", type: "address", indexed: true },
      { name: "nonce", type: "bytes32", indexed: true },
    ],
  },
  {
    type: "function",
    name: "transferWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" },
      { name: "r", type: "bytes32" },
      { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
] as const;

export interface ExactEvmPayload {
  signature: Hex;
  authorization: { from: `0x${string}`; to: `0x${string}`; value: string; validAfter: string; validBefore: string; nonce: Hex };
}

/** the token call that settles an authorization (v, r, s from its 65-byte signature): simulated, then sent */
export function transferCall(asset: `0x${string}`, p: ExactEvmPayload) {
  const sig = parseSignature(p.signature);
  return {
    address: asset,
    abi: TOKEN_ABI,
    functionName: "transferWithAuthorization",
    args: [
      p.authorization.from,
      p.authorization.to,
      BigInt(p.authorization.value),
      BigInt(p.authorization.validAfter),
      BigInt(p.authorization.validBefore),
      p.authorization.nonce,
      sig.v !== undefined ? Number(sig.v) : 27 + sig.yParity,
      sig.r,
      sig.s,
    ],
  } as const;
}

/** a node's refusal of a nonce another transaction of the account took (viem's error for it, or the node's words) */
export const nonceTaken = (err: unknown): boolean =>
  (err instanceof BaseError && err.walk((e) => e instanceof NonceTooLowError) !== null) ||
  /nonce too low|already known|replacement transaction underpriced/i.test(String((err as Error)?.message));

/** the first line of an error, at most 200 characters: what a failure reason carries */
export function shortError(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(err)).split("\n")[0]!.slice(0, 200);
}
