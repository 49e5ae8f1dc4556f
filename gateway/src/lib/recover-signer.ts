/**
 * Signers recovered with libsecp256k1 (the `secp256k1` package's native
 * binding, about 75 us a recovery on this machine) instead of viem's
 * pure-JavaScript curve (about 3 ms: two thirds of a relay's time,
 * bench/README.md): of a signed transaction (the rules of viem's
 * `recoverTransactionAddress`: the unsigned serialization's keccak, the
 * signature's y parity or EIP-155 v) and of a hash (`recoverAddress`: a
 * 65-byte r, s, v signature; any other form goes to viem). Checked against
 * viem in recover-signer.test.ts; without the native binding it is viem's.
 */
import { createRequire } from "node:module";
import {
  concat,
  getAddress,
  hexToBytes,
  keccak256,
  pad,
  parseTransaction,
  recoverAddress,
  recoverTransactionAddress,
  serializeTransaction,
  type Address,
  type Hex,
  type TransactionSerialized,
} from "viem";

interface NativeSecp256k1 {
  ecdsaRecover(signature: Uint8Array, recid: number, message: Uint8Array, compressed: boolean): Uint8Array;
}

/** the native binding only (the package's own fallback is pure JavaScript, no faster than viem) */
const native: NativeSecp256k1 | undefined = (() => {
  try {
    return createRequire(import.meta.url)("secp256k1/bindings") as NativeSecp256k1;
  } catch {
    return undefined;
  }
})();

export const nativeRecovery = native !== undefined;

/** the recovery bit of a parsed signature: y parity, else from v (27/28, or EIP-155's chainId * 2 + 35/36) */
function recoveryBit(tx: { yParity?: number; v?: bigint }): number {
  if (tx.yParity === 0 || tx.yParity === 1) return tx.yParity;
  const v = tx.v;
  if (v === undefined) throw new Error("the transaction carries no signature");
  if (v === 0n || v === 27n) return 0;
  if (v === 1n || v === 28n) return 1;
  if (v >= 35n) return Number((v - 35n) % 2n);
  throw new Error(`invalid signature v ${v}`);
}

const addressOf = (publicKey: Uint8Array): Address => getAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);

/** the signer of `hash` (32 bytes) under a 65-byte r, s, v signature (v 27/28 or 0/1); other forms as viem recovers them */
export async function recoverHashSigner(hash: Hex, signature: Hex): Promise<Address> {
  const bytes = /^0x[0-9a-fA-F]{130}$/.test(signature) ? hexToBytes(signature) : undefined;
  const v = bytes?.[64];
  if (!native || !bytes || (v !== 0 && v !== 1 && v !== 27 && v !== 28)) return recoverAddress({ hash, signature });
  return addressOf(native.ecdsaRecover(bytes.subarray(0, 64), v >= 27 ? v - 27 : v, hexToBytes(hash), false));
}

/** the signers of the transactions seen last: a relay recovers its transaction's signer twice (its idempotency scope, then the checks), and a retry sends the same bytes */
const recentSigners = new Map<string, Promise<Address>>();
const RECENT_SIGNERS = 1024;

/** the signer of a signed transaction (a pure function of its bytes, so the answers for the last 1,024 are kept) */
export function recoverTransactionSigner(signed: Hex): Promise<Address> {
  let signer = recentSigners.get(signed);
  if (!signer) {
    signer = recoverUncached(signed);
    if (recentSigners.size >= RECENT_SIGNERS) recentSigners.delete(recentSigners.keys().next().value!);
    recentSigners.set(signed, signer);
  }
  return signer;
}

async function recoverUncached(signed: Hex): Promise<Address> {
  if (!native) return recoverTransactionAddress({ serializedTransaction: signed as TransactionSerialized });
  const tx = parseTransaction(signed as TransactionSerialized);
  if (tx.r === undefined || tx.s === undefined) throw new Error("the transaction carries no signature");
  const unsigned = serializeTransaction({ ...tx, r: undefined, s: undefined, v: undefined, yParity: undefined, sidecars: undefined } as Parameters<
    typeof serializeTransaction
  >[0]);
  const hash = keccak256(unsigned, "bytes");
  const signature = hexToBytes(concat([pad(tx.r, { size: 32 }), pad(tx.s, { size: 32 })]));
  return addressOf(native.ecdsaRecover(signature, recoveryBit(tx), hash, false));
}
