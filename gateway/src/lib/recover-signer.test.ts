/** The native recovery agrees with viem's on every transaction type and on signed hashes, and refuses what viem refuses. */
import { hashTypedData, keccak256, recoverAddress, recoverTransactionAddress, toHex, type Hex, type TransactionSerialized } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { nativeRecovery, recoverHashSigner, recoverTransactionSigner } from "./recover-signer";

const viemSigner = (signed: Hex) => recoverTransactionAddress({ serializedTransaction: signed as TransactionSerialized });

describe("recoverTransactionSigner", () => {
  it("uses libsecp256k1 on this machine (the package's prebuilt binding)", () => {
    expect(nativeRecovery).toBe(true);
  });

  it("recovers what viem recovers: legacy (with and without EIP-155), EIP-2930, EIP-1559, any nonce, data and value", async () => {
    for (let i = 0; i < 24; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const base = {
        to: privateKeyToAccount(generatePrivateKey()).address,
        nonce: i * 7,
        value: BigInt(i) * 10n ** 15n,
        data: `0x${"ab".repeat(i * 3)}` as Hex,
        gas: 21_000n + BigInt(i),
      };
      const chainId = [1, 8453, 84532, 42161][i % 4]!;
      const signed = await account.signTransaction(
        i % 4 === 0
          ? { ...base, type: "legacy", gasPrice: 1_000_000_000n } // pre-EIP-155: no chain id
          : i % 4 === 1
            ? { ...base, type: "legacy", gasPrice: 1_000_000_000n, chainId }
            : i % 4 === 2
              ? { ...base, type: "eip2930", gasPrice: 1_000_000_000n, chainId, accessList: [] }
              : { ...base, type: "eip1559", maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n, chainId },
      );
      expect(await recoverTransactionSigner(signed), `case ${i}`).toBe(account.address);
      expect(await viemSigner(signed)).toBe(account.address);
    }
  });

  it("a changed byte recovers another signer, as with viem; a broken signature is refused", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const signed = await account.signTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: 3,
      to: account.address,
      value: 1n,
      gas: 21_000n,
      maxFeePerGas: 2n,
      maxPriorityFeePerGas: 1n,
    });
    // the value field (1) becomes 2: the signature now covers another transaction
    const tampered = signed.replace(/01(80c0)/, "02$1") as Hex;
    expect(tampered).not.toBe(signed);
    const other = await recoverTransactionSigner(tampered);
    expect(other).not.toBe(account.address);
    expect(other).toBe(await viemSigner(tampered));
    await expect(recoverTransactionSigner("0x02c0" as Hex)).rejects.toThrow();
  });

  it("recovers the signer of a hash and of EIP-712 typed data as viem does (v 27/28), and hands other forms to viem", async () => {
    for (let i = 0; i < 12; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const hash = keccak256(toHex(`message ${i}`));
      const signature = await account.sign({ hash });
      expect(await recoverHashSigner(hash, signature)).toBe(account.address);
      const typed = {
        domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: account.address },
        types: { Ping: [{ name: "n", type: "uint256" }] },
        primaryType: "Ping" as const,
        message: { n: BigInt(i) },
      };
      const typedSignature = await account.signTypedData(typed);
      expect(await recoverHashSigner(hashTypedData(typed), typedSignature)).toBe(account.address);
      // the same signature with v as 0/1 (yParity)
      const v = parseInt(typedSignature.slice(-2), 16);
      expect(await recoverHashSigner(hashTypedData(typed), `${typedSignature.slice(0, -2)}${(v - 27).toString(16).padStart(2, "0")}` as Hex)).toBe(
        account.address,
      );
      // a changed hash: another signer, the one viem finds
      const other = keccak256(toHex(`other ${i}`));
      expect(await recoverHashSigner(other, signature)).toBe(await recoverAddress({ hash: other, signature }));
    }
    await expect(recoverHashSigner(keccak256("0x01"), `0x${"00".repeat(65)}` as Hex)).rejects.toThrow();
  });
});
