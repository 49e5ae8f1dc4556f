/**
 * A signed transaction checked against the step it claims to sign (spec 2.6):
 * parsed (legacy, EIP-2930 or EIP-1559), its signer recovered, and its chain
 * id, to, data and value compared with the step's; each mismatch has its own
 * typed 400. Pure: no chain access.
 */
import { keccak256, parseTransaction, type TransactionSerialized } from "viem";
import { recoverTransactionSigner } from "../lib/recover-signer";
import { TreasuryError, type ErrorCode } from "@treasury/core/lib/errors";

export interface VerifiedTransaction {
  signer: `0x${string}`;
  hash: `0x${string}`;
}

/** Parse and check a signed transaction against a step. Each mismatch has its own code. */
export async function verifySignedTransaction(
  signed: `0x${string}`,
  expected: { to: string; data: string; value: string; chainId: number; signer: string },
): Promise<VerifiedTransaction> {
  let parsed: ReturnType<typeof parseTransaction>;
  let signer: `0x${string}`;
  try {
    parsed = parseTransaction(signed as TransactionSerialized);
    signer = await recoverTransactionSigner(signed);
  } catch (err) {
    const reason = err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message).split("\n")[0] : String(err);
    throw new TreasuryError("invalid_signed_transaction", `signed_transaction is not a signed legacy, EIP-2930 or EIP-1559 transaction: ${reason}`);
  }
  if (!["legacy", "eip2930", "eip1559"].includes(parsed.type ?? "")) {
    throw new TreasuryError("invalid_signed_transaction", `transaction type ${parsed.type} is not accepted; use legacy, EIP-2930 or EIP-1559`);
  }
  const mismatch = (code: ErrorCode, field: string, got: unknown, want: unknown) =>
    new TreasuryError(code, `${field} of the signed transaction (${String(got)}) does not match the envelope (${String(want)})`, {
      field,
      expected: want,
      received: got,
    });
  if (parsed.chainId !== expected.chainId) throw mismatch("chain_id_mismatch", "chain id", parsed.chainId ?? "none (pre-EIP-155)", expected.chainId);
  if ((parsed.to ?? "").toLowerCase() !== expected.to.toLowerCase()) throw mismatch("to_mismatch", "to", parsed.to ?? "none", expected.to);
  if ((parsed.data ?? "0x").toLowerCase() !== expected.data.toLowerCase())
    throw mismatch("data_mismatch", "data", `${(parsed.data ?? "0x").slice(0, 18)}...`, `${expected.data.slice(0, 18)}...`);
  if ((parsed.value ?? 0n) !== BigInt(expected.value)) throw mismatch("value_mismatch", "value", (parsed.value ?? 0n).toString(), expected.value);
  if (signer.toLowerCase() !== expected.signer.toLowerCase()) throw mismatch("signer_mismatch", "signer", signer, expected.signer);
  return { signer, hash: keccak256(signed) };
}
