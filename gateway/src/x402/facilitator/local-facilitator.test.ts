/** The facilitator's EOA signature check: native recovery first, viem's verification for anything it does not prove. */
import { verifyTypedData as viemVerifyTypedData, type VerifyTypedDataParameters } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { withNativeEoaCheck } from "./native-eoa-check";

const typed = {
  domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const },
  types: {
    TransferWithAuthorization: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ],
  },
  primaryType: "TransferWithAuthorization" as const,
  message: {
    from: "0x1111111111111111111111111111111111111111",
    to: "0x2222222222222222222222222222222222222222",
    value: 10_000n,
    nonce: `0x${"ab".repeat(32)}`,
  },
};

/** a client whose own verifyTypedData answers `answer` and counts its calls (viem's, which would ask the chain) */
function client(answer: boolean) {
  const calls: VerifyTypedDataParameters[] = [];
  return { calls, verifyTypedData: async (args: VerifyTypedDataParameters) => (calls.push(args), answer) };
}

describe("withNativeEoaCheck", () => {
  it("an EOA's own signature is accepted by recovery alone, as viem's offline check accepts it", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const signature = await account.signTypedData(typed as never);
    const c = client(false);
    const args = { ...typed, address: account.address, signature } as unknown as VerifyTypedDataParameters;
    expect(await withNativeEoaCheck(c).verifyTypedData(args)).toBe(true);
    expect(c.calls).toHaveLength(0);
    expect(await viemVerifyTypedData(args as never)).toBe(true);
  });

  it("another key's signature, a changed message, or a signature that is not 65 bytes goes to viem, whose answer stands", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const claimed = privateKeyToAccount(generatePrivateKey()).address;
    const signature = await signer.signTypedData(typed as never);
    for (const answer of [false, true]) {
      const c = client(answer);
      const check = withNativeEoaCheck(c);
      expect(await check.verifyTypedData({ ...typed, address: claimed, signature } as never)).toBe(answer);
      expect(await check.verifyTypedData({ ...typed, message: { ...typed.message, value: 10_001n }, address: signer.address, signature } as never)).toBe(
        answer,
      );
      // a contract wallet's signature (ERC-6492 wrapped, ERC-1271 bytes)
      expect(await check.verifyTypedData({ ...typed, address: signer.address, signature: `${signature}${"00".repeat(40)}` } as never)).toBe(answer);
      expect(c.calls).toHaveLength(3);
    }
  });
});
