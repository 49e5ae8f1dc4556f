/**
 * A managed action as one Safe transaction (Safe 1.4.1): the action's calls
 * (fee transfer, approval, Aave Pool call: packages/core/src/chain/envelope-plan.ts, planned
 * for the Safe as the wallet) batched through Safe's MultiSendCallOnly by a
 * delegatecall, or the one call itself. Its hash is the EIP-712 SafeTx hash
 * the Safe's owners sign, in the Safe's own domain (chain id, Safe address),
 * exactly as the Safe's getTransactionHash computes it.
 *
 * The executor pays no refund to itself: gasPrice, baseGas and safeTxGas are
 * 0, so the Safe requires every call of the batch to succeed (GS013 reverts
 * the whole transaction otherwise) and never pays anyone for gas.
 */
import { concat, encodeFunctionData, encodePacked, getAddress, hashMessage, hashTypedData, hexToBytes, size, type Address, type Hex } from "viem";
import { MULTI_SEND_ABI } from "@treasury/core/contracts/safe";
import { multiSendCallOnly } from "@treasury/core/contracts/safe-deployments";
import { recoverHashSigner } from "../lib/recover-signer";
import type { PlannedStep } from "@treasury/core/chain/envelope-plan";

export interface SafeTx {
  to: Address;
  value: string;
  data: Hex;
  /** 0 call, 1 delegatecall (the batch through MultiSendCallOnly) */
  operation: 0 | 1;
  safeTxGas: string;
  baseGas: string;
  gasPrice: string;
  gasToken: Address;
  refundReceiver: Address;
  nonce: string;
}

const ZERO: Address = "0x0000000000000000000000000000000000000000";

/** the Safe transaction that makes these calls from the Safe, in order, at the Safe's `nonce` */
export function safeTxFor(chainId: number, calls: Pick<PlannedStep, "to" | "data" | "value">[], nonce: bigint): SafeTx {
  const common = { safeTxGas: "0", baseGas: "0", gasPrice: "0", gasToken: ZERO, refundReceiver: ZERO, nonce: nonce.toString() };
  if (calls.length === 1) {
    const [c] = calls;
    return { to: getAddress(c!.to), value: c!.value, data: c!.data, operation: 0, ...common };
  }
  // MultiSend's packed encoding: operation (uint8), to, value, data length, data; each a call (MultiSendCallOnly)
  const packed = concat(
    calls.map((c) => encodePacked(["uint8", "address", "uint256", "uint256", "bytes"], [0, getAddress(c.to), BigInt(c.value), BigInt(size(c.data)), c.data])),
  );
  return {
    to: multiSendCallOnly(chainId),
    value: "0",
    data: encodeFunctionData({ abi: MULTI_SEND_ABI, functionName: "multiSend", args: [packed] }),
    operation: 1,
    ...common,
  };
}

/** the EIP-712 typed data of a Safe transaction (what an owner's wallet signs with eth_signTypedData_v4) */
export function safeTxTypedData(chainId: number, safe: Address, tx: SafeTx) {
  return {
    domain: { chainId, verifyingContract: getAddress(safe) },
    types: {
      SafeTx: [
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "data", type: "bytes" },
        { name: "operation", type: "uint8" },
        { name: "safeTxGas", type: "uint256" },
        { name: "baseGas", type: "uint256" },
        { name: "gasPrice", type: "uint256" },
        { name: "gasToken", type: "address" },
        { name: "refundReceiver", type: "address" },
        { name: "nonce", type: "uint256" },
      ],
    },
    primaryType: "SafeTx" as const,
    message: {
      to: tx.to,
      value: BigInt(tx.value),
      data: tx.data,
      operation: tx.operation,
      safeTxGas: BigInt(tx.safeTxGas),
      baseGas: BigInt(tx.baseGas),
      gasPrice: BigInt(tx.gasPrice),
      gasToken: tx.gasToken,
      refundReceiver: tx.refundReceiver,
      nonce: BigInt(tx.nonce),
    },
  };
}

/** the same typed data as JSON for a wallet's eth_signTypedData_v4 (EIP712Domain listed, numbers as decimal strings) */
export function safeTxTypedDataJson(chainId: number, safe: Address, tx: SafeTx) {
  const typed = safeTxTypedData(chainId, safe, tx);
  return {
    domain: typed.domain,
    types: {
      EIP712Domain: [
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
      ...typed.types,
    },
    primaryType: typed.primaryType,
    message: tx,
  };
}

export const safeTxHash = (chainId: number, safe: Address, tx: SafeTx): Hex => hashTypedData(safeTxTypedData(chainId, safe, tx));

/**
 * The owner whose signature this is, as the Safe's checkNSignatures reads it:
 * v 27/28 an ECDSA signature of the hash itself (EIP-712, eth_signTypedData),
 * v 31/32 of the hash as an eth_sign message. Contract signatures and
 * approved hashes (v 0, 1) are not accepted here: an owner that is a contract
 * approves on chain and executes itself.
 */
export async function safeSignatureOwner(hash: Hex, signature: Hex): Promise<Address> {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) throw new Error("a signature is 65 bytes (r, s, v), 0x-prefixed hex");
  const v = hexToBytes(signature)[64]!;
  if (v === 27 || v === 28) return recoverHashSigner(hash, signature);
  if (v === 31 || v === 32) return recoverHashSigner(hashMessage({ raw: hash }), `${signature.slice(0, 130)}${(v - 4).toString(16)}` as Hex);
  throw new Error(`v ${v}: only owners' ECDSA signatures (v 27/28 typed data, 31/32 eth_sign) are accepted`);
}

/** the signatures execTransaction takes: concatenated in ascending order of their owners' addresses */
export function packSignatures(signatures: { owner: Address; signature: Hex }[]): Hex {
  const sorted = [...signatures].sort((a, b) => (BigInt(a.owner) < BigInt(b.owner) ? -1 : 1));
  return concat(sorted.map((s) => s.signature));
}
