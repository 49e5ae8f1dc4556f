/**
 * Aave V3's aTokens and variable debt tokens as scaled balances (IScaledBalanceToken, IAToken): a user's
 * balance is its scaled balance times the reserve's index (normalized income for an aToken, normalized variable
 * debt for a debt token), so a scaled balance changes only when the user's position does, and these events say when.
 */
import { parseAbi } from "viem";

export const AAVE_SCALED_TOKEN_ABI = parseAbi([
  "function scaledBalanceOf(address user) view returns (uint256)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event Mint(address indexed caller, address indexed onBehalfOf, uint256 value, uint256 balanceIncrease, uint256 index)",
  "event Burn(address indexed from, address indexed target, uint256 value, uint256 balanceIncrease, uint256 index)",
  "event BalanceTransfer(address indexed from, address indexed to, uint256 value, uint256 index)",
]);
