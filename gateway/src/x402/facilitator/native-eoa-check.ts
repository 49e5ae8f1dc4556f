/** An externally owned account's signature checked by native recovery before viem asks the chain. */
import { hashTypedData, isAddressEqual, type Hex, type VerifyTypedDataParameters } from "viem";
import { recoverHashSigner } from "../../lib/recover-signer";

/**
 * viem's `verifyTypedData` with an externally owned account's 65-byte signature checked by native recovery
 * first (lib/recover-signer.ts): viem's default asks the chain (an eth_call of the ERC-6492 validator),
 * then recovers in JavaScript when that call fails, as it does on a local chain; x402's verify made three
 * of each per paid request (verify, and settle's two). A signature that does not recover to the address
 * (a contract wallet's: ERC-1271, ERC-6492) is verified by viem as before.
 */
export function withNativeEoaCheck<C extends { verifyTypedData: (args: VerifyTypedDataParameters) => Promise<boolean> }>(client: C): C {
  const viemVerify = client.verifyTypedData.bind(client);
  const verifyTypedData = async (args: VerifyTypedDataParameters): Promise<boolean> => {
    const { address, signature, ...typed } = args as VerifyTypedDataParameters & { signature: unknown };
    if (typeof signature === "string" && /^0x[0-9a-fA-F]{130}$/.test(signature)) {
      try {
        if (isAddressEqual(await recoverHashSigner(hashTypedData(typed as never), signature as Hex), address)) return true;
      } catch {
        // not a recoverable ECDSA signature: viem decides
      }
    }
    return viemVerify(args);
  };
  return { ...client, verifyTypedData };
}
