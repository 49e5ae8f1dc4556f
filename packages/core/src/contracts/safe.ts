/**
 * The parts of a Safe (1.4.1) the service uses: the operator's queue of Safe
 * transactions, delegation changes (enableModule, disableModule), the
 * MultiSend batch and the console sessions' owner check (isOwner). ABIs
 * only (the console's browser bundle imports them); addresses are in
 * safe-deployments.ts.
 */
import { parseAbi } from "viem";

export const SAFE_ABI = parseAbi([
  "function nonce() view returns (uint256)",
  "function getOwners() view returns (address[])",
  "function isOwner(address owner) view returns (bool)",
  "function getThreshold() view returns (uint256)",
  "function getTransactionHash(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, uint256 _nonce) view returns (bytes32)",
  "function execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures) payable returns (bool success)",
  "function simulateAndRevert(address targetContract, bytes calldataPayload)",
  "function getModulesPaginated(address start, uint256 pageSize) view returns (address[] array, address next)",
  "function enableModule(address module)",
  "function disableModule(address prevModule, address module)",
  "event ExecutionSuccess(bytes32 indexed txHash, uint256 payment)",
  "event ExecutionFailure(bytes32 indexed txHash, uint256 payment)",
]);

/** a Safe transaction's fields as JSON carries them (amounts as decimal strings) */
export interface SafeTxFields {
  to: `0x${string}`;
  value: string;
  data: `0x${string}`;
  operation: 0 | 1;
  safeTxGas: string;
  baseGas: string;
  gasPrice: string;
  gasToken: `0x${string}`;
  refundReceiver: `0x${string}`;
}

/** the fields in the order the Safe's getTransactionHash (then the nonce) and execTransaction (then the signatures) take them */
export const safeTxArgs = (t: SafeTxFields) =>
  [t.to, BigInt(t.value), t.data, t.operation, BigInt(t.safeTxGas), BigInt(t.baseGas), BigInt(t.gasPrice), t.gasToken, t.refundReceiver] as const;

/** Safe's SimulateTxAccessor: delegatecalled by simulateAndRevert, it runs one operation in the Safe's context and reports */
export const SIMULATE_TX_ACCESSOR_ABI = parseAbi([
  "function simulate(address to, uint256 value, bytes data, uint8 operation) returns (uint256 estimate, bool success, bytes returnData)",
]);

export const MULTI_SEND_ABI = parseAbi(["function multiSend(bytes transactions) payable"]);
