/**
 * The treasury service the routes call: one door to the three parts of a treasury, each in its own module
 * (services/treasuries/):
 *
 *   registration  a wallet's treasury (proven or not) or a demo one, with its sandbox key (registration.ts)
 *   views         its configuration, health, state and a portfolio's figures, from its chain when it is
 *                 backed by one, else from its sandbox ledger (views.ts)
 *   history       its executions' receipts, its fee audit trail and its position's samples (history.ts)
 *
 * A read of its health or state first reconciles its relay steps left broadcasting with the chain.
 */
import type { Holdings } from "@treasury/core/domain/portfolio";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { ExecutionMode, TreasuryRecord } from "../store/treasury-store";
import { HISTORY_MAX_POINTS } from "../store/position-sample-store";
import type { StatementVerifier } from "./statement-verifier";
import type { ServiceContext } from "./context";
import { resolveSubject, type Subject } from "./subject";
import { TreasuryHistory } from "./treasuries/history";
import { TreasuryRegistration, type CreateTreasuryInput } from "./treasuries/registration";
import { NO_CHAIN, portfolioView, TreasuryViews, type ChainSide } from "./treasuries/views";

/** the most samples a position history answers (store/position-sample-store.ts) */
export { HISTORY_MAX_POINTS };

export class TreasuryService {
  private readonly registration: TreasuryRegistration;
  private readonly views: TreasuryViews;
  private readonly history: TreasuryHistory;

  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "envelopes" | "executions" | "fees" | "positionSamples" | "treasuries">,
    private readonly chainSide: ChainSide = NO_CHAIN,
    statements?: StatementVerifier,
  ) {
    this.registration = new TreasuryRegistration(ctx, statements);
    this.views = new TreasuryViews(ctx, chainSide);
    this.history = new TreasuryHistory(ctx);
  }

  /** the exact typed data a wallet signs to prove it controls `wallet` at registration */
  ownershipStatement(wallet: string, chain: TreasuryChain, executionMode: ExecutionMode) {
    return this.registration.ownershipStatement(wallet, chain, executionMode);
  }

  /** POST /api/v1/treasuries: the registered treasury's view with its sandbox key, shown once */
  async create(input: CreateTreasuryInput) {
    const { treasury, key } = await this.registration.register(input);
    return { ...(await this.views.view(treasury)), api_key: key.key, api_key_expires_at: key.expiresAt ?? undefined };
  }

  /** POST /api/v1/sandbox/keys: a key bound to a fresh demo sandbox treasury */
  createSandboxKey() {
    return this.registration.createSandboxKey();
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

  /** spec 2.7; a chain-backed treasury's view of itself is only as fresh as its last read */
  view(t: TreasuryRecord) {
    return this.views.view(t);
  }

  /** GET /api/v1/health: the treasury's relay steps in flight reconciled with the chain first, then its health (spec 2.9) */
  async health(treasuryId: string) {
    await this.chainSide.reconcile(treasuryId);
    return await this.views.healthView(await this.get(treasuryId));
  }

  /** GET /api/v1/treasury: the treasury's relay steps in flight reconciled with the chain first, then its state (spec 2.8) */
  async state(treasuryId: string) {
    await this.chainSide.reconcile(treasuryId);
    return await this.views.stateView(await this.get(treasuryId));
  }

  /** spec 2.18 plus the holdings behind the figures */
  async portfolioView(holdings: Holdings, environment: string, address: string) {
    return portfolioView(holdings, environment, address);
  }

  /** GET /api/v1/health/history (extension): the position's samples since `since` (default: 24 hours ago), oldest first */
  healthHistory(treasuryId: string, since?: string) {
    return this.history.healthHistory(treasuryId, since);
  }

  /** the receipt of one of the treasury's executions, or undefined */
  receipt(treasuryId: string, id: string): Promise<Record<string, unknown> | undefined> {
    return this.history.receipt(treasuryId, id);
  }

  /** a page of the fee audit trail (extension), oldest first; the cursor is the position after which the page starts */
  auditView(treasuryId: string, page: { limit?: number; cursor?: string } = {}) {
    return this.history.auditView(treasuryId, page);
  }
}
