/**
 * What a treasury shows of itself: its configuration (spec 2.7), its health (2.9), its state (2.8) and a
 * portfolio's figures (2.18). A chain-backed treasury's figures are Aave's own, read from the chain (its
 * position and balances); any other treasury's come from its sandbox ledger (its holdings in the store).
 * `ChainSide` is what these reads ask beside the store; the service graph (services.ts) supplies it.
 */
import { formatDecimal, usdcToNumber } from "@treasury/core/domain/money";
import { portfolioFigures, positionOf, type Holdings } from "@treasury/core/domain/portfolio";
import { healthScore, ltvPct, ltvZonesOf, zoneOf } from "@treasury/core/domain/position";
import { PRESETS, policyOf } from "@treasury/core/domain/presets";
import { chainHealthScore, type ChainPosition } from "../../chain/chain-gateway";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";

/** what the treasury views read beside the store: the chain (when the treasury is backed by one) and protection */
export interface ChainSide {
  backed(t: TreasuryRecord): boolean;
  position(t: TreasuryRecord): Promise<ChainPosition | null>;
  /** auto_repay_active: an active delegation with an engine watching; the delegation's trigger */
  protection(t: TreasuryRecord): Promise<{ active: boolean; protectBelowHealth: number | null }>;
  /** settle the treasury's relay steps left broadcasting, from the chain (RelayService.reconcileTreasury), before a read */
  reconcile(treasuryId: string): Promise<void>;
}
export const NO_CHAIN: ChainSide = {
  backed: () => false,
  position: async () => null,
  protection: async () => ({ active: false, protectBelowHealth: null }),
  reconcile: async () => undefined,
};

export class TreasuryViews {
  constructor(
    private readonly ctx: ServiceContext<"envelopes">,
    private readonly chainSide: ChainSide,
  ) {}

  /** the position as Aave reports it, for a chain-backed treasury; null for a sandbox one */
  private chainPosition(t: TreasuryRecord): Promise<ChainPosition | null> {
    return this.chainSide.position(t);
  }

  /** where a treasury's figures come from: its chain (read and broadcast there), or its own sandbox ledger */
  private environment(t: TreasuryRecord): "chain" | "sandbox_simulation" {
    return this.chainSide.backed(t) ? "chain" : "sandbox_simulation";
  }

  /** spec 2.7 (sandbox figures) */
  private viewSync(t: TreasuryRecord) {
    const preset = PRESETS[t.preset];
    const position = positionOf(t.holdings);
    return {
      sandbox: true as const,
      object: "treasury" as const,
      treasury_id: t.id,
      wallet_address: t.walletAddress,
      chain: t.chain,
      preset: t.preset,
      policy: policyOf(preset),
      execution_mode: t.executionMode,
      ownership: t.ownership,
      status: t.status,
      created_at: t.createdAt,
      state: {
        environment: this.environment(t),
        usdc_balance: usdcToNumber(t.holdings.usdcMicro),
        debt_usdc: usdcToNumber(t.holdings.debtMicro),
        ltv: ltvPct(position),
        health_score: healthScore(position),
      },
    };
  }

  /** a chain-backed treasury's view of itself is only as fresh as its last read */
  async view(t: TreasuryRecord) {
    const base = this.viewSync(t);
    const chain = await this.chainPosition(t).catch(() => null);
    if (!chain) return base;
    const figures = chainFigures(chain);
    return {
      ...base,
      state: {
        environment: "chain",
        usdc_balance: figures.usdc_balance,
        debt_usdc: figures.borrowed_usd,
        ltv: figures.ltv,
        health_score: figures.health_score,
        block_number: Number(chain.blockNumber),
      },
    };
  }

  /** spec 2.9; from Aave's own figures for a chain-backed treasury */
  async healthView(t: TreasuryRecord) {
    const preset = PRESETS[t.preset];
    const [chain, protection] = await Promise.all([this.chainPosition(t), this.chainSide.protection(t)]);
    const position = chain ?? positionOf(t.holdings);
    const ltv = ltvPct(position);
    return {
      sandbox: true,
      object: "health_state",
      treasury_id: t.id,
      environment: this.environment(t),
      ...(chain ? { source: { chain: t.chain, block_number: Number(chain.blockNumber), aave_health_factor: chain.healthFactorWad.toString() } } : {}),
      health_score: chain ? chainHealthScore(chain) : healthScore(positionOf(t.holdings)),
      ltv,
      ltv_zone: zoneOf(ltv, preset),
      auto_repay_active: protection.active,
      protect_below_health_score: protection.protectBelowHealth ?? preset.protectBelowHealthScore,
      ltv_zones: ltvZonesOf(preset),
    };
  }

  /**
   * spec 2.8, both shapes in one open object. utilization_score is the share
   * of the preset's borrowing room in use: LTV / ceiling x 100.
   */
  async stateView(t: TreasuryRecord) {
    const preset = PRESETS[t.preset];
    const [chain, protection] = await Promise.all([this.chainPosition(t), this.chainSide.protection(t)]);
    const figures = chain ? chainFigures(chain) : portfolioFigures(t.holdings);
    return {
      sandbox: true,
      object: "treasury_state",
      environment: this.environment(t),
      ...(chain ? { source: { chain: t.chain, block_number: Number(chain.blockNumber), read: "Aave V3 getUserAccountData and token balances" } } : {}),
      treasury_id: t.id,
      wallet_address: t.walletAddress,
      chain: t.chain,
      execution_mode: t.executionMode,
      holdings: figures.holdings,
      total_value_usd: figures.total_value_usd,
      collateral_value_usd: figures.collateral_value_usd,
      borrowed_usd: figures.borrowed_usd,
      ltv: figures.ltv,
      health_score: figures.health_score,
      utilization_score: Math.round((figures.ltv / preset.ceiling) * 10_000) / 100,
      auto_repay_active: protection.active,
      usdc_balance: figures.holdings.usdc,
      debt_usdc: figures.borrowed_usd,
      pending_tx_id: (await this.ctx.stores.envelopes.pendingFor(t.id, this.ctx.clock.now().toISOString()))?.txId ?? null,
    };
  }
}

/** spec 2.18 plus the holdings behind the figures */
export function portfolioView(holdings: Holdings, environment: string, address: string) {
  const figures = portfolioFigures(holdings);
  return {
    object: "portfolio_state" as const,
    environment,
    address,
    current_ltv: figures.ltv,
    health_score: figures.health_score,
    holdings: figures.holdings,
    collateral_value_usd: figures.collateral_value_usd,
    total_value_usd: figures.total_value_usd,
    borrowed_usd: figures.borrowed_usd,
    liquidation_threshold_pct: figures.liquidation_threshold_pct,
    prices: "fixed sandbox prices (BTC 60,000 USD, ETH 3,000 USD); see /api/v1/treasuries definitions",
  };
}

/** holdings and figures of a chain-backed treasury, from its Aave position and balances */
function chainFigures(chain: ChainPosition) {
  return {
    holdings: {
      btc: Number(formatDecimal(chain.holdings.aBtc, 8)),
      eth: Number(formatDecimal(chain.holdings.aWeth, 18)),
      usdc: usdcToNumber(chain.holdings.walletUsdc),
      usdc_supplied: usdcToNumber(chain.holdings.aUsdc),
    },
    collateral_value_usd: usdcToNumber(chain.collateralMicro),
    total_value_usd: usdcToNumber(chain.collateralMicro + chain.holdings.walletUsdc),
    borrowed_usd: usdcToNumber(chain.debtMicro),
    ltv: ltvPct(chain),
    health_score: chainHealthScore(chain),
    usdc_balance: usdcToNumber(chain.holdings.walletUsdc),
    liquidation_threshold_pct: chain.liquidationThresholdBps / 100,
  };
}
