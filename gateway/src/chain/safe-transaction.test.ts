/** The Safe transaction's pure parts: the batch, the owner a signature names, the signatures' order. */
import { concat, decodeFunctionData, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { MULTI_SEND_ABI } from "@treasury/core/contracts/safe";
import { multiSendCallOnly } from "@treasury/core/contracts/safe-deployments";
import { decodeBatch } from "../../../signer-agent/src/operator";
import { packSignatures, safeSignatureOwner, safeTxFor, safeTxHash } from "./safe-transaction";

const SAFE = "0x4D5C934A1F30aaDfF5b4DC7283a85a0FFd878d48";
const calls = [
  { to: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" as const, data: "0xa9059cbb00" as Hex, value: "0" as const },
  { to: "0xA238Dd80C259a72e81d7e4664a9801593F98d1c5" as const, data: "0x617ba037" as Hex, value: "0" as const },
];

describe("safe transactions", () => {
  it("one call is the call itself; several are one delegatecall to MultiSendCallOnly that decodes back to them", () => {
    const one = safeTxFor(8453, calls.slice(0, 1), 7n);
    expect(one).toMatchObject({ to: calls[0]!.to, data: calls[0]!.data, operation: 0, nonce: "7", gasPrice: "0", baseGas: "0", safeTxGas: "0" });
    const batch = safeTxFor(8453, calls, 7n);
    expect(batch.operation).toBe(1);
    expect(batch.to).toBe(multiSendCallOnly(8453));
    expect(decodeFunctionData({ abi: MULTI_SEND_ABI, data: batch.data }).functionName).toBe("multiSend");
    expect(decodeBatch(batch)).toEqual(calls.map((c) => ({ to: c.to, value: 0n, data: c.data })));
    // the nonce and the chain are part of what is signed
    expect(safeTxHash(8453, SAFE, batch)).not.toBe(safeTxHash(8453, SAFE, safeTxFor(8453, calls, 8n)));
    expect(safeTxHash(8453, SAFE, batch)).not.toBe(safeTxHash(42161, SAFE, batch));
  });

  it("names the owner of a typed-data (v 27/28) or eth_sign (v 31/32) signature, and refuses other kinds", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const hash = safeTxHash(8453, SAFE, safeTxFor(8453, calls, 0n));
    expect(await safeSignatureOwner(hash, await owner.sign({ hash }))).toBe(owner.address);
    const ethSign = await owner.signMessage({ message: { raw: hash } });
    const v = parseInt(ethSign.slice(130), 16);
    expect(await safeSignatureOwner(hash, `${ethSign.slice(0, 130)}${(v + 4).toString(16)}` as Hex)).toBe(owner.address);
    // as a plain v 27/28 signature the eth_sign one names someone else (it signed another digest)
    expect(await safeSignatureOwner(hash, ethSign)).not.toBe(owner.address);
    const approvedHash = `0x${"00".repeat(12)}${owner.address.slice(2)}${"00".repeat(32)}01` as Hex;
    await expect(safeSignatureOwner(hash, approvedHash)).rejects.toThrow(/only owners' ECDSA signatures/);
    await expect(safeSignatureOwner(hash, "0x1234")).rejects.toThrow(/65 bytes/);
  });

  it("packs signatures in ascending order of their owners, as the Safe requires", () => {
    const a = { owner: "0x00000000000000000000000000000000000000aa" as const, signature: `0x${"aa".repeat(65)}` as Hex };
    const b = { owner: "0x0000000000000000000000000000000000000Abb" as const, signature: `0x${"bb".repeat(65)}` as Hex };
    expect(packSignatures([b, a])).toBe(concat([a.signature, b.signature]));
  });
});
