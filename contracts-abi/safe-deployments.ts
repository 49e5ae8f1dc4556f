/** Safe's canonical deployments the service uses, from Safe's own registry (never a literal). */
import { getMultiSendCallOnlyDeployment } from "@safe-global/safe-deployments";
import { getAddress } from "viem";

/** Safe's MultiSendCallOnly 1.4.1 on a chain (by chain id): calls only, never a delegatecall inside the batch */
export function multiSendCallOnly(chainId: number): `0x${string}` {
  const d = getMultiSendCallOnlyDeployment({ version: "1.4.1", network: String(chainId) });
  const address = d?.networkAddresses[String(chainId)];
  if (!address) throw new Error(`Safe's MultiSendCallOnly 1.4.1 is not deployed on chain ${chainId}`);
  return getAddress(Array.isArray(address) ? address[0]! : address);
}
