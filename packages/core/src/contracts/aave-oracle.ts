/** Aave V3's AaveOracle: asset prices in the market's base currency (USD with 8 decimals on V3 markets). */
import { parseAbi } from "viem";

export const AAVE_ORACLE_PRICES_ABI = parseAbi([
  "function getAssetPrice(address asset) view returns (uint256)",
  "function getAssetsPrices(address[] assets) view returns (uint256[])",
  "function getSourceOfAsset(address asset) view returns (address)",
  "function BASE_CURRENCY_UNIT() view returns (uint256)",
]);
