/** The project's ProtectionModule (contracts-abi/src/ProtectionModule.sol) and the Safe's module check. */
import { parseAbi } from "viem";

export const PROTECTION_MODULE_ABI = parseAbi([
  "function execute(address to, bytes data) returns (bool)",
  "function safe() view returns (address)",
  "function pool() view returns (address)",
  "function automation() view returns (address)",
  "function parkTargetBps() view returns (uint256)",
  "function listedToken(address) view returns (bool)",
  "function ltvBps() view returns (uint256)",
  "error NotAutomation()",
  "error NotEnabled()",
  "error CallNotAllowed(address to, bytes4 selector)",
  "error NotForThisSafe()",
  "error TokenNotListed(address token)",
  "error LtvDidNotDecrease(uint256 beforeBps, uint256 afterBps)",
  "error LtvIncreased(uint256 beforeBps, uint256 afterBps)",
  "error OvershotParkTarget(uint256 afterBps, uint256 parkTargetBps)",
  "error ExecutionFailed()",
]);

export const SAFE_MODULE_ABI = parseAbi(["function isModuleEnabled(address module) view returns (bool)"]);

/** EIP-1271: a contract wallet (a Safe through its fallback handler) vouches for a signature over a hash */
export const EIP1271_ABI = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);
export const EIP1271_MAGIC_VALUE = "0x1626ba7e";
