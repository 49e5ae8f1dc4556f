/**
 * The parts of a Safe (1.4.1) the service uses for the operator's queue of
 * Safe transactions, and the canonical MultiSendCallOnly that batches an
 * action's calls, from Safe's own deployment registry (never a literal).
 */
import { getMultiSendCallOnlyDeployment } from "@safe-global/safe-deployments";
import { getAddress, parseAbi } from "viem";

export const SAFE_ABI = parseAbi([
  "function nonce() view returns (uint256)",
  "function getOwners() view returns (address[])",
  "function getThreshold() view returns (uint256)",
  "function getTransactionHash(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, uint256 _nonce) view returns (bytes32)",
  "function execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures) payable returns (bool success)",
  "event ExecutionSuccess(bytes32 indexed txHash, uint256 payment)",
  "event ExecutionFailure(bytes32 indexed txHash, uint256 payment)",
]);

export const MULTI_SEND_ABI = parseAbi(["function multiSend(bytes transactions) payable"]);

/** Safe's MultiSendCallOnly 1.4.1 on a chain (by chain id): calls only, never a delegatecall inside the batch */
export function multiSendCallOnly(chainId: number): `0x${string}` {
  const d = getMultiSendCallOnlyDeployment({ version: "1.4.1", network: String(chainId) });
  const address = d?.networkAddresses[String(chainId)];
  if (!address) throw new Error(`Safe's MultiSendCallOnly 1.4.1 is not deployed on chain ${chainId}`);
  return getAddress(Array.isArray(address) ? address[0]! : address);
}
