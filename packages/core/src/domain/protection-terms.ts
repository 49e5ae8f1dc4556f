/**
 * What the service's protection automation may do and what it costs, as the
 * service publishes it (policy-state's protection_authority, fees.json's
 * protection_costs, docs/DOMAIN.md). Each statement is enforced by the code
 * it names: the ProtectionModule (contracts-abi/src/ProtectionModule.sol) on
 * chain, the engine (gateway/src/protection/engine.ts) off chain.
 */
import { DELEVERAGE_MAX_SLIPPAGE_BPS } from "../contracts/protection-module";

/** the order the engine repays in, cheapest first (gateway/src/protection/repayment-source.ts) */
export const REPAYMENT_ORDER = [
  "the Safe's idle USDC (approve and repay)",
  "the Safe's supplied USDC (repayWithATokens)",
  "the Safe's collateral, sold for USDC in one transaction (the module's deleverage: withdraw, swap on the Uniswap V3 pool, repay; Aave flash liquidity repays first when the position is too close to its liquidation threshold to withdraw first), the collateral with the lowest liquidation threshold first",
] as const;

/** what the module itself checks on every deleverage, whatever the automation key sends */
export const ON_CHAIN_BOUNDS = [
  `the swap returns at least Aave's oracle value of the collateral sold less ${DELEVERAGE_MAX_SLIPPAGE_BPS} bps (fixed in the module at deployment and signed by the Safe's owners when they attach it)`,
  "LTV goes down and ends no lower than the park target; the health factor goes up",
  "the Safe's equity (collateral minus debt plus the idle balances of the two tokens touched, at the oracle's prices) falls by no more than the slippage bound and the flash premium on the amount moved",
  "nothing leaves the Safe except to the Aave Pool, the Uniswap router's swap with the Safe as recipient, and the flash loan's repayment; plain calls only (no delegatecall); no allowance is left behind",
  "repayments are for the Safe's own debt only; withdrawals go to the Safe only; the module denies everything while the Safe has not enabled it",
] as const;

export const DELEGATION_MECHANISM =
  "A Safe module on the operator's wallet lets the service automation key call only Aave repay and repayWithATokens for the Safe's own debt, withdraw to the Safe, approvals of listed tokens to the Pool, and deleverage (collateral sold for USDC to repay the Safe's debt in one transaction, bounded against Aave's oracle); only when LTV goes down toward the park target; it denies everything until the operator enables it.";

/** fees.json protection_costs: a protection action pays no service fee; these are what the market and Aave take */
export const PROTECTION_COSTS = {
  service_fee_pct: 0,
  max_swap_slippage_bps: DELEVERAGE_MAX_SLIPPAGE_BPS,
  swap: `a deleverage sells collateral on the Uniswap V3 0.05% pool and accepts no less than Aave's oracle value less ${DELEVERAGE_MAX_SLIPPAGE_BPS} bps (the pool's fee and price impact fall within it)`,
  flash_loan:
    "Aave's flash-loan premium (the Pool's FLASHLOAN_PREMIUM_TOTAL) on the USDC borrowed for the length of one transaction, only when the position is too close to its liquidation threshold to withdraw first",
  gas: "paid by the service's automation key, within the published gas caps",
} as const;

/** the protection engine re-reads each watched position in full at least this often (blocks), whatever the index says */
export const WATCH_REREAD_BLOCKS = 30;

/** policy-state's monitoring_tier.check_frequency: what the engine does for an active managed treasury, and otherwise */
export const CHECK_FREQUENCY = {
  active: `every block: the oracle's prices and the positions that changed are read at each new block, each position in full at least every ${WATCH_REREAD_BLOCKS} blocks, and a position at or past its trigger is confirmed on chain and acted on in the same block`,
  inactive: "none: no engine acts on this treasury until its delegation is active and an engine holding its key is watching",
} as const;
