/**
 * What a protection scenario is (its options) and what it gives (its result): the protected Safe's outcome
 * beside its unprotected twin's, block by block. runner.ts plays it; main.ts prints and saves it; picture.ts
 * draws its series.
 */
import type { DatabaseLocation } from "../../gateway/src/store/db";

export interface ScenarioOptions {
  /** a path's name (paths.ts pathNamed: slide, fast-drop, wick, random-<seed>) */
  path: string;
  /** the position's LTV at the start, percent (at 3,000 USD per ETH: 60 is the ceiling) */
  startLtvPct: number;
  /** engines in this process, each block's passes at once (0: protection off for both Safes) */
  engines?: number;
  /** one engine as its own process instead, killed with SIGKILL at its first act and started again */
  crash?: boolean;
  /** the store (a test passes its own); a SQLite file in a temporary directory otherwise */
  database?: DatabaseLocation;
}

export interface SafeOutcome {
  lowest_health: number;
  liquidations: number;
  /** collateral a liquidator took beyond the debt it repaid, USD at the oracle */
  liquidation_bonus_lost_usd: number;
  /** debt Aave wrote off as the USDC reserve's deficit after a liquidation took the last collateral, USD */
  bad_debt_usd: number;
  /** collateral - debt + idle USDC and WETH at the end, USD at the final oracle prices */
  equity_end_usd: number;
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  start_ltv_pct: number;
  blocks: number;
  engines: string;
  protected: SafeOutcome & {
    deleverages: number;
    /** executed protection actions recorded in the store (one per claimed trigger) */
    recorded_actions: number;
    triggers: number;
    /** from the first block under the trigger to the block of the first deleverage */
    blocks_trigger_to_act: number | null;
    /** the longest stretch, in blocks, the health factor stayed under the trigger after crossing it */
    max_blocks_under_trigger: number;
    gas_usd: number;
    /** oracle value of the collateral sold minus the USDC received, USD */
    slippage_vs_oracle_usd: number;
    flash_premium_usd: number;
    ltv_end_pct: number;
  };
  baseline: SafeOutcome;
  equity_kept_vs_baseline_usd: number;
  /** what the in-process engines answered for the protected Safe while it was under the trigger: outcome and detail, counted */
  engine_answers_under_trigger?: Record<string, number>;
  /** the crash run: when the engine was killed and what its claim held then */
  crash?: { killed_at_block: number; signed_transactions_on_the_claim: number; pending_when_killed: number };
  /** per block: ETH price, each Safe's health factor after the market moved (before anyone acted) */
  series: { block: number; eth: number; protected: number; baseline: number }[];
}
