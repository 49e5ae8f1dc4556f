/**
 * Treasury registration, sandbox keys and the views of a treasury.
 */
import { randomBytes } from "node:crypto";
import { getAddress } from "viem";
import { DEMO_HOLDINGS, EMPTY_HOLDINGS, portfolioFigures, positionOf, type Holdings } from "../domain/portfolio";
import { healthScore, ltvPct, ltvZonesOf, zoneOf } from "../domain/position";
import { PRESETS, policyOf, type PresetName } from "../domain/presets";
import { usdcToNumber } from "../domain/money";
import { ApiError } from "../http/errors";
import { newId } from "../lib/ids";
import type { Chain, ExecutionMode, TreasuryOrigin, TreasuryRecord } from "../store/treasury-store";
import { issueApiKey } from "./api-keys";
import type { AppContext } from "./context";

const DAY_MS = 86_400_000;

export interface CreateTreasuryInput {
  wallet_address: string;
  chain: Chain;
  preset: PresetName;
  execution_mode: ExecutionMode;
}

export class TreasuryService {
  constructor(private readonly ctx: AppContext) {}

  private get ttlMs() {
    return this.ctx.config.sandboxKeyTtlDays * DAY_MS;
  }

  /** POST /api/v1/treasuries: a sandbox treasury and its sandbox key (shown once). */
  create(input: CreateTreasuryInput) {
    const now = this.ctx.clock.now();
    const { treasury, key } = this.ctx.db.transaction(() => {
      const treasury = this.insertTreasury({
        walletAddress: getAddress(input.wallet_address),
        chain: input.chain,
        preset: input.preset,
        executionMode: input.execution_mode,
        origin: "registration",
        holdings: EMPTY_HOLDINGS,
        now,
      });
      const key = issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return { treasury, key };
    })();
    return { ...this.view(treasury), api_key: key.key, api_key_expires_at: key.expiresAt ?? undefined };
  }

  /**
   * POST /api/v1/sandbox/keys: a key bound to a fresh demo sandbox treasury
   * (managed mode, seeded with the demo portfolio) so an evaluator can act at once.
   */
  createSandboxKey() {
    const now = this.ctx.clock.now();
    const active = this.ctx.stores.apiKeys.countActiveSandbox(now.toISOString());
    if (active >= this.ctx.config.sandboxKeyCapacity) {
      throw new ApiError(503, "sandbox_unavailable", "sandbox key capacity is exhausted; retry later", {}, { "Retry-After": "3600" });
    }
    return this.ctx.db.transaction(() => {
      const treasury = this.insertTreasury({
        // a random address with no known key: the demo treasury is simulated, never signed for
        walletAddress: getAddress(`0x${randomBytes(20).toString("hex")}`),
        chain: "base",
        preset: "balanced",
        executionMode: "managed",
        origin: "sandbox_key",
        holdings: DEMO_HOLDINGS,
        now,
      });
      const key = issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return {
        sandbox: true as const,
        key: key.key,
        expires_at: key.expiresAt!,
        docs: this.ctx.links.url("/docs"),
        treasury_id: treasury.id,
      };
    })();
  }

  get(id: string): TreasuryRecord {
    const t = this.ctx.stores.treasuries.get(id);
    if (!t) throw new ApiError(404, "treasury_not_found", `treasury ${id} does not exist`);
    return t;
  }

  findByWallet(address: string): TreasuryRecord | undefined {
    return this.ctx.stores.treasuries.findByWallet(address);
  }

  /** spec 2.7 */
  view(t: TreasuryRecord) {
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
      status: t.status,
      created_at: t.createdAt,
      state: {
        environment: "sandbox_simulation",
        usdc_balance: usdcToNumber(t.holdings.usdcMicro),
        debt_usdc: usdcToNumber(t.holdings.debtMicro),
        ltv: ltvPct(position),
        health_score: healthScore(position),
      },
    };
  }

  /** spec 2.9 */
  healthView(t: TreasuryRecord) {
    const preset = PRESETS[t.preset];
    const position = positionOf(t.holdings);
    const ltv = ltvPct(position);
    return {
      sandbox: true,
      object: "health_state",
      treasury_id: t.id,
      environment: "sandbox_simulation",
      health_score: healthScore(position),
      ltv,
      ltv_zone: zoneOf(ltv, preset),
      auto_repay_active: false,
      protect_below_health_score: preset.protectBelowHealthScore,
      ltv_zones: ltvZonesOf(preset),
    };
  }

  /**
   * spec 2.8, both shapes in one open object. utilization_score is the share
   * of the preset's borrowing room in use: LTV / ceiling x 100.
   */
  stateView(t: TreasuryRecord) {
    const preset = PRESETS[t.preset];
    const figures = portfolioFigures(t.holdings);
    return {
      sandbox: true,
      object: "treasury_state",
      environment: "sandbox_simulation",
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
      auto_repay_active: false,
      usdc_balance: figures.holdings.usdc,
      debt_usdc: figures.borrowed_usd,
      pending_tx_id: this.ctx.stores.envelopes.pendingFor(t.id, this.ctx.clock.now().toISOString())?.txId ?? null,
    };
  }

  /** the fee audit trail (extension) */
  auditView(treasuryId: string) {
    return {
      object: "list" as const,
      treasury_id: treasuryId,
      data: this.ctx.stores.fees.forTreasury(treasuryId).map((e) => ({
        id: e.id,
        action: e.action,
        amount_usdc: usdcToNumber(e.amountMicro),
        fee_usdc: usdcToNumber(e.feeMicro),
        fee_bps: e.feeBps,
        fee_basis: e.feeBasis,
        fee_tier: e.feeTier,
        fee_bearing: e.feeMicro > 0n,
        trigger: e.trigger,
        execution_ref: e.executionRef,
        created_at: e.createdAt,
      })),
    };
  }

  /** spec 2.18 plus the holdings behind the figures */
  portfolioView(holdings: Holdings, environment: string, address: string) {
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

  private insertTreasury(o: {
    walletAddress: `0x${string}`;
    chain: Chain;
    preset: PresetName;
    executionMode: ExecutionMode;
    origin: TreasuryOrigin;
    holdings: Holdings;
    now: Date;
  }): TreasuryRecord {
    const record: TreasuryRecord = {
      id: newId("trs"),
      walletAddress: o.walletAddress,
      chain: o.chain,
      preset: o.preset,
      executionMode: o.executionMode,
      status: "active",
      origin: o.origin,
      holdings: o.holdings,
      createdAt: o.now.toISOString(),
      updatedAt: o.now.toISOString(),
    };
    this.ctx.stores.treasuries.insert(record);
    return record;
  }
}
