/** Aave V3 Pool functions the project calls or encodes (ABI fragments of IPool). */
import { parseAbi } from "viem";

export const AAVE_POOL_ABI = parseAbi([
  "struct ReserveConfigurationMap { uint256 data; }",
  "struct ReserveDataLegacy { ReserveConfigurationMap configuration; uint128 liquidityIndex; uint128 currentLiquidityRate; uint128 variableBorrowIndex; uint128 currentVariableBorrowRate; uint128 currentStableBorrowRate; uint40 lastUpdateTimestamp; uint16 id; address aTokenAddress; address stableDebtTokenAddress; address variableDebtTokenAddress; address interestRateStrategyAddress; uint128 accruedToTreasury; uint128 unbacked; uint128 isolationModeTotalDebt; }",
  "function getReserveData(address asset) view returns (ReserveDataLegacy)",
  "struct UserConfigurationMap { uint256 data; }",
  "function getUserConfiguration(address user) view returns (UserConfigurationMap)",
  "function FLASHLOAN_PREMIUM_TOTAL() view returns (uint128)",
  "function POOL_REVISION() view returns (uint256)",
  "function getReserveNormalizedIncome(address asset) view returns (uint256)",
  "function getReserveNormalizedVariableDebt(address asset) view returns (uint256)",
  "function getUserEMode(address user) view returns (uint256)",
  "function getUserAccountData(address user) view returns (uint256 totalCollateralBase, uint256 totalDebtBase, uint256 availableBorrowsBase, uint256 currentLiquidationThreshold, uint256 ltv, uint256 healthFactor)",
  "function supply(address asset, uint256 amount, address onBehalfOf, uint16 referralCode)",
  "function borrow(address asset, uint256 amount, uint256 interestRateMode, uint16 referralCode, address onBehalfOf)",
  "function repay(address asset, uint256 amount, uint256 interestRateMode, address onBehalfOf) returns (uint256)",
  "function repayWithATokens(address asset, uint256 amount, uint256 interestRateMode) returns (uint256)",
  "function withdraw(address asset, uint256 amount, address to) returns (uint256)",
]);

/** the Pool as a liquidator and the fork's tools read and call it (IPool, 3.3+: getReserveDeficit) */
export const AAVE_LIQUIDATION_ABI = parseAbi([
  "function liquidationCall(address collateralAsset, address debtAsset, address user, uint256 debtToCover, bool receiveAToken)",
  "function getReserveAToken(address asset) view returns (address)",
  "function getReserveVariableDebtToken(address asset) view returns (address)",
  "function getReserveDeficit(address asset) view returns (uint256)",
]);

/** the Pool's events that change a user's position without a token moving (IPool) */
export const AAVE_POOL_EVENTS_ABI = parseAbi([
  "event ReserveUsedAsCollateralEnabled(address indexed reserve, address indexed user)",
  "event ReserveUsedAsCollateralDisabled(address indexed reserve, address indexed user)",
  "event UserEModeSet(address indexed user, uint8 categoryId)",
  "event LiquidationCall(address indexed collateralAsset, address indexed debtAsset, address indexed user, uint256 debtToCover, uint256 liquidatedCollateralAmount, address liquidator, bool receiveAToken)",
]);

/** Aave's price oracle: an asset's price in the market's base currency (USD, 8 decimals) */
export const AAVE_ORACLE_ABI = parseAbi(["function getAssetPrice(address asset) view returns (uint256)"]);
