/**
 * The project's ProtectionModule (contracts-abi/src/ProtectionModule.sol), the
 * one declaration of how one is configured for a Safe (what the operator
 * deploys, what the gateway checks before attaching it), and the Safe's module
 * check.
 */
import { getAddress, parseAbi } from "viem";
import { AAVE_MARKETS, type TreasuryChain } from "./chains";
import { CONVERT_POOL_FEE, swapRouter02 } from "./uniswap";

/**
 * The most a deleverage's swap may return under Aave's oracle value, in basis
 * points: fixed in the module at deployment, part of what the Safe's owners
 * sign when they attach it. With the 0.05% pool fee, one act can sell into a
 * pool of the fork's depth up to about 9.5 WETH at a time.
 */
export const DELEVERAGE_MAX_SLIPPAGE_BPS = 100;

/** the module's constructor arguments for a Safe on `chain` */
export function protectionModuleConfig(chain: TreasuryChain, safe: `0x${string}`, automation: `0x${string}`, parkTargetBps: number) {
  const m = AAVE_MARKETS[chain];
  return {
    config: {
      safe: getAddress(safe),
      pool: m.pool,
      automation: getAddress(automation),
      parkTargetBps: BigInt(parkTargetBps),
      oracle: m.oracle,
      router: swapRouter02(m.chainId),
      poolFee: CONVERT_POOL_FEE,
      usdc: m.usdc,
      maxSlippageBps: BigInt(DELEVERAGE_MAX_SLIPPAGE_BPS),
    },
    tokens: [m.usdc, m.weth, m.btc] as `0x${string}`[],
  };
}

export const PROTECTION_MODULE_ABI = parseAbi([
  "struct Config { address safe; address pool; address automation; uint256 parkTargetBps; address oracle; address router; uint24 poolFee; address usdc; uint256 maxSlippageBps; }",
  "constructor(Config c, address[] tokens)",
  "function execute(address to, bytes data) returns (bool)",
  "function deleverage(address collateral, uint256 amount, uint256 flashAmount) returns (bool)",
  "function safe() view returns (address)",
  "function pool() view returns (address)",
  "function automation() view returns (address)",
  "function parkTargetBps() view returns (uint256)",
  "function oracle() view returns (address)",
  "function router() view returns (address)",
  "function poolFee() view returns (uint24)",
  "function usdc() view returns (address)",
  "function maxSlippageBps() view returns (uint256)",
  "function listedToken(address) view returns (bool)",
  "function ltvBps() view returns (uint256)",
  "event Deleveraged(address indexed collateral, uint256 collateralSold, uint256 usdcReceived, uint256 flashAmount, uint256 flashPremium, uint256 ltvBeforeBps, uint256 ltvAfterBps, uint256 healthBefore, uint256 healthAfter)",
  "error NotAutomation()",
  "error NotEnabled()",
  "error CallNotAllowed(address to, bytes4 selector)",
  "error NotForThisSafe()",
  "error TokenNotListed(address token)",
  "error LtvDidNotDecrease(uint256 beforeBps, uint256 afterBps)",
  "error LtvIncreased(uint256 beforeBps, uint256 afterBps)",
  "error OvershotParkTarget(uint256 afterBps, uint256 parkTargetBps)",
  "error ExecutionFailed()",
  "error Reentrancy()",
  "error NotCollateral(address asset)",
  "error ZeroAmount()",
  "error NotPool()",
  "error NotOwnFlashLoan()",
  "error SlippageAboveOracle(uint256 received, uint256 minimum)",
  "error HealthDidNotRise(uint256 beforeHf, uint256 afterHf)",
  "error EquityLoss(uint256 lossBase, uint256 boundBase)",
  "error ApprovalLeftBehind(address token, address spender, uint256 amount)",
  "error BadConfiguration()",
]);

export const SAFE_MODULE_ABI = parseAbi(["function isModuleEnabled(address module) view returns (bool)"]);

/** EIP-1271: a contract wallet (a Safe through its fallback handler) vouches for a signature over a hash */
export const EIP1271_ABI = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);
export const EIP1271_MAGIC_VALUE = "0x1626ba7e";
