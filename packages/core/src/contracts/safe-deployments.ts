/** Safe's canonical deployments the service uses, from Safe's own registry (never a literal). */
import { getMultiSendCallOnlyDeployment, getSimulateTxAccessorDeployment } from "@safe-global/safe-deployments";
import { getAddress } from "viem";

type Deployment = { networkAddresses: Record<string, string | string[]> } | undefined;

function addressOn(name: string, d: Deployment, chainId: number): `0x${string}` {
  const address = d?.networkAddresses[String(chainId)];
  if (!address) throw new Error(`Safe's ${name} 1.4.1 is not deployed on chain ${chainId}`);
  return getAddress(Array.isArray(address) ? address[0]! : address);
}

/** Safe's MultiSendCallOnly 1.4.1 on a chain (by chain id): calls only, never a delegatecall inside the batch */
export const multiSendCallOnly = (chainId: number) =>
  addressOn("MultiSendCallOnly", getMultiSendCallOnlyDeployment({ version: "1.4.1", network: String(chainId) }), chainId);

/** Safe's SimulateTxAccessor 1.4.1: what a Safe transaction would do, run in the Safe's context and reverted */
export const simulateTxAccessor = (chainId: number) =>
  addressOn("SimulateTxAccessor", getSimulateTxAccessorDeployment({ version: "1.4.1", network: String(chainId) }), chainId);
