/**
 * Treasury registration, sandbox keys and the views of a treasury.
 */
import { randomBytes } from "node:crypto";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { getAddress } from "viem";
import { DEMO_HOLDINGS, EMPTY_HOLDINGS, portfolioFigures, positionOf, type Holdings } from "@treasury/core/domain/portfolio";
import { healthScore, ltvPct, ltvZonesOf, zoneOf } from "@treasury/core/domain/position";
import { chainHealthScore, type ChainPosition } from "../chain/chain-gateway";
import { formatDecimal } from "@treasury/core/domain/money";
import { PRESETS, policyOf, type PresetName } from "@treasury/core/domain/presets";
import { usdcToNumber } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import { registrationStatement, STATEMENT_MAX_AGE_SECONDS } from "@treasury/core/domain/statements";
import type { ExecutionMode, Ownership, TreasuryOrigin, TreasuryRecord } from "../store/treasury-store";
import type { AuditPosition } from "../store/fee-store";
import { HISTORY_MAX_POINTS } from "../store/position-sample-store";
import { AUDIT_PAGE } from "../schemas/actions";
import type { SignedProof, StatementVerifier } from "./statement-verifier";
import { issueApiKey } from "./api-keys";
import type { ServiceContext } from "./context";
import { resolveSubject, type Subject } from "./subject";

const DAY_MS = 86_400_000;

export interface CreateTreasuryInput {
  wallet_address: string;
  chain: TreasuryChain;
  preset: PresetName;
  execution_mode: ExecutionMode;
  ownership_proof?: SignedProof;
}

/** what the treasury views read beside the store: the chain (when the treasury is backed by one) and protection */
export interface ChainSide {
  backed(t: TreasuryRecord): boolean;
  position(t: TreasuryRecord): Promise<ChainPosition | null>;
  /** auto_repay_active: an active delegation with an engine watching; the delegation's trigger */
  protection(t: TreasuryRecord): Promise<{ active: boolean; protectBelowHealth: number | null }>;
  /** settle the treasury's relay steps left broadcasting, from the chain (RelayService.reconcileTreasury), before a read */
  reconcile(treasuryId: string): Promise<void>;
}
const NO_CHAIN: ChainSide = {
  backed: () => false,
  position: async () => null,
  protection: async () => ({ active: false, protectBelowHealth: null }),
  reconcile: async () => undefined,
};

/** the most samples a position history answers (store/position-sample-store.ts) */
export { HISTORY_MAX_POINTS };
const HISTORY_DEFAULT_MS = 86_400_000;

export class TreasuryService {
  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "envelopes" | "executions" | "fees" | "positionSamples" | "treasuries">,
    private readonly chainSide: ChainSide = NO_CHAIN,
    private readonly statements?: StatementVerifier,
  ) {}

  /** the position as Aave reports it, for a chain-backed treasury; null for a sandbox one */
  private chainPosition(t: TreasuryRecord): Promise<ChainPosition | null> {
    return this.chainSide.position(t);
  }

  /** where a treasury's figures come from: its chain (read and broadcast there), or its own sandbox ledger */
  private environment(t: TreasuryRecord): "chain" | "sandbox_simulation" {
    return this.chainSide.backed(t) ? "chain" : "sandbox_simulation";
  }

  private get ttlMs() {
    return this.ctx.config.sandboxKeyTtlDays * DAY_MS;
  }

  /** the exact typed data a wallet signs to prove it controls `wallet` at registration */
  ownershipStatement(wallet: string, chain: TreasuryChain, executionMode: ExecutionMode) {
    const now = this.ctx.clock.now();
    const nonce = `own_${randomBytes(16).toString("hex")}`;
    const issuedAt = now.toISOString();
    const typed = registrationStatement({ service: this.ctx.links.base, wallet: getAddress(wallet), chain, executionMode, nonce, issuedAt });
    return {
      object: "ownership_statement" as const,
      typed_data: typed,
      nonce,
      issued_at: issuedAt,
      expires_at: new Date(now.getTime() + STATEMENT_MAX_AGE_SECONDS * 1000).toISOString(),
      how: "Sign typed_data with the wallet (eth_signTypedData_v4; a Safe signs it through EIP-1271), then POST /api/v1/treasuries with the same wallet_address, chain and execution_mode and ownership_proof {signature, nonce, issued_at}. Any fresh nonce of your own works too.",
    };
  }

  /**
   * POST /api/v1/treasuries: a sandbox treasury and its sandbox key (shown
   * once). With a valid ownership proof it is `proven`; without, `unproven`.
   */
  async create(input: CreateTreasuryInput) {
    const now = this.ctx.clock.now();
    const wallet = getAddress(input.wallet_address);
    let ownership: Ownership = "unproven";
    let proofRecord: Record<string, unknown> | null = null;
    if (input.ownership_proof) {
      if (!this.statements) throw new Error("the treasury service needs the statement verifier");
      const proof = input.ownership_proof;
      const statement = registrationStatement({
        service: this.ctx.links.base,
        wallet,
        chain: input.chain,
        executionMode: input.execution_mode,
        nonce: proof.nonce,
        issuedAt: proof.issued_at,
      });
      const method = await this.statements.verify("invalid_ownership_proof", { chain: input.chain, signer: wallet, statement, proof: proof as SignedProof });
      ownership = "proven";
      proofRecord = { method, nonce: proof.nonce, issued_at: proof.issued_at, signature: proof.signature, verified_at: now.toISOString() };
    }
    const { treasury, key } = await this.ctx.tx.transaction(async () => {
      if (proofRecord && !(await this.statements!.spendNonce(wallet, String(proofRecord.nonce), "register_treasury"))) {
        throw new TreasuryError("invalid_ownership_proof", "this nonce was already used by this wallet; sign a statement with a fresh nonce");
      }
      const treasury = await this.insertTreasury({
        walletAddress: wallet,
        chain: input.chain,
        preset: input.preset,
        executionMode: input.execution_mode,
        origin: "registration",
        ownership,
        proof: proofRecord,
        holdings: EMPTY_HOLDINGS,
        now,
      });
      const key = await issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return { treasury, key };
    });
    return { ...(await this.view(treasury)), api_key: key.key, api_key_expires_at: key.expiresAt ?? undefined };
  }

  /**
   * POST /api/v1/sandbox/keys: a key bound to a fresh demo sandbox treasury
   * (managed mode, seeded with the demo portfolio) so an evaluator can act at once.
   */
  async createSandboxKey() {
    const now = this.ctx.clock.now();
    const active = await this.ctx.stores.apiKeys.countActiveSandbox(now.toISOString());
    if (active >= this.ctx.config.sandboxKeyCapacity) {
      throw new TreasuryError("sandbox_unavailable", "sandbox key capacity is exhausted; retry later", {}, { "Retry-After": "3600" });
    }
    return await this.ctx.tx.transaction(async () => {
      const treasury = await this.insertTreasury({
        // a random address with no known key: the demo treasury is simulated, never signed for
        walletAddress: getAddress(`0x${randomBytes(20).toString("hex")}`),
        chain: "base",
        preset: "balanced",
        executionMode: "managed",
        origin: "sandbox_key",
        ownership: "unproven",
        holdings: DEMO_HOLDINGS,
        now,
      });
      const key = await issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return {
        sandbox: true as const,
        key: key.key,
        expires_at: key.expiresAt!,
        docs: this.ctx.links.url("/docs"),
        treasury_id: treasury.id,
      };
    });
  }

  /** the subject of a public read or preview: the demo portfolio, or the proven treasury of a wallet address (services/subject.ts) */
  subject(address: string | undefined): Promise<Subject> {
    return resolveSubject(this.ctx, address);
  }

  async get(id: string): Promise<TreasuryRecord> {
    const t = await this.ctx.stores.treasuries.get(id);
    if (!t) throw new TreasuryError("treasury_not_found", `treasury ${id} does not exist`);
    return t;
  }

  /** spec 2.7 (sandbox figures) */
  viewSync(t: TreasuryRecord) {
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

  /** GET /api/v1/health: the treasury's relay steps in flight reconciled with the chain first, then `healthView` */
  async health(treasuryId: string) {
    await this.chainSide.reconcile(treasuryId);
    return await this.healthView(await this.get(treasuryId));
  }

  /** GET /api/v1/treasury: the treasury's relay steps in flight reconciled with the chain first, then `stateView` */
  async state(treasuryId: string) {
    await this.chainSide.reconcile(treasuryId);
    return await this.stateView(await this.get(treasuryId));
  }

  /** GET /api/v1/health/history (extension): the position's samples since `since` (default: 24 hours ago), oldest first */
  async healthHistory(treasuryId: string, since?: string) {
    const from = since ?? new Date(this.ctx.clock.now().getTime() - HISTORY_DEFAULT_MS).toISOString();
    const points = await this.ctx.stores.positionSamples.history(treasuryId, new Date(from).toISOString());
    return {
      object: "position_history",
      treasury_id: treasuryId,
      points: points.map((p) => ({
        at: p.at,
        ltv: p.ltv,
        health_score: p.healthScore,
        collateral_usd: usdcToNumber(p.collateralMicro),
        debt_usdc: usdcToNumber(p.debtMicro),
      })),
      note: "sampled by the protection engine for treasuries with a proven delegation, and after executed Safe transactions",
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

  /** the fee audit trail (extension) */
  /** the receipt of one of the treasury's executions, or undefined */
  receipt(treasuryId: string, id: string): Promise<Record<string, unknown> | undefined> {
    return this.ctx.stores.executions.receipt(treasuryId, id);
  }

  /** a page of the fee audit trail, oldest first; the cursor is the position after which the page starts */
  async auditView(treasuryId: string, page: { limit?: number; cursor?: string } = {}) {
    const after = page.cursor === undefined ? undefined : auditPositionOf(page.cursor);
    const { entries, next } = await this.ctx.stores.fees.pageForTreasury(treasuryId, page.limit ?? AUDIT_PAGE.default, after);
    return {
      object: "list" as const,
      treasury_id: treasuryId,
      has_more: next !== undefined,
      next_cursor: next ? auditCursor(next) : null,
      data: entries.map((e) => ({
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
  async portfolioView(holdings: Holdings, environment: string, address: string) {
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

  private async insertTreasury(o: {
    walletAddress: `0x${string}`;
    chain: TreasuryChain;
    preset: PresetName;
    executionMode: ExecutionMode;
    origin: TreasuryOrigin;
    ownership: Ownership;
    proof?: Record<string, unknown> | null;
    holdings: Holdings;
    now: Date;
  }): Promise<TreasuryRecord> {
    const record: TreasuryRecord = {
      id: newId("trs"),
      walletAddress: o.walletAddress,
      chain: o.chain,
      preset: o.preset,
      executionMode: o.executionMode,
      status: "active",
      origin: o.origin,
      ownership: o.ownership,
      holdings: o.holdings,
      createdAt: o.now.toISOString(),
      updatedAt: o.now.toISOString(),
    };
    await this.ctx.stores.treasuries.insert(record, o.proof ?? null);
    return record;
  }
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

/** the cursor of an audit position: "<time in Unix milliseconds>-<insertion number>"; any such pair is a place in the order */
const auditCursor = (p: AuditPosition): string => `${Date.parse(p.createdAt)}-${p.position}`;

function auditPositionOf(cursor: string): AuditPosition {
  const [ms, position] = cursor.split("-");
  return { createdAt: new Date(Number(ms)).toISOString(), position: Number(position) };
}
