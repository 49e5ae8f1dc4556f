/**
 * The simulated treasury ledger: the holdings of a sandbox treasury, changed by
 * each executed action as its declaration says (`ledger` in actions/*.ts). The
 * same function runs for managed execution and for a relayed wallet-mode
 * envelope, so both end in the same state. This module holds the shapes and
 * the refusals they share.
 */
import type { AssetSymbol } from "./assets";
import type { Micro } from "./money";
import type { Holdings } from "./portfolio";

export class LedgerError extends Error {
  constructor(
    readonly code: "insufficient_balance" | "no_debt" | "invalid_request",
    message: string,
  ) {
    super(message);
  }
}

export interface ActionParams {
  /** deposit: the BTC/ETH split asked for, percent adding up to 100: recorded on the receipt, it buys nothing (the deposit supplies USDC) */
  allocation?: { btc: number; eth: number };
  /** convert: the asset bought */
  target?: "btc" | "eth";
  /** borrow: a free label */
  purpose?: string;
  /** withdraw, sell: the asset taken out of Aave, and how many of its base units (a decimal string: JSON keeps it exact) */
  asset?: AssetSymbol;
  units?: string;
  /** sell: what the pool quoted for the units when the action was planned, USDC micro (the swap's bound is 1% under it) */
  quoted?: string;
  /** exit: also sell the ETH and BTC withdrawn */
  sell?: boolean;
  /** exit: the plan made on the chain's figures (actions/exit-plan.ts ExitPlan, as JSON) */
  exit?: string;
}

export interface LedgerResult {
  holdings: Holdings;
  /** units bought and supplied (convert), by asset, token base units */
  bought: Partial<Record<AssetSymbol, bigint>>;
  /** amount of debt actually repaid (repay) */
  repaidMicro: Micro;
}
