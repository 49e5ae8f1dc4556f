/**
 * Treasury actions (spec 4.5): deposit, convert, borrow, repay.
 *
 * - managed mode: 200 with the receipt of 2.4. On an operator's Safe the
 *   action becomes a Safe transaction for its owners to sign, executed by the
 *   service once signed (status processing -> completed | failed), and only
 *   for the registration the Safe itself proved (another is refused, 403
 *   ownership_not_proven); a sandbox wallet on the local fork whose
 *   registration proved it runs its steps at once; a simulated treasury (a
 *   sandbox key's, or an unproven registration's: its own ledger, never the
 *   wallet's chain state) applies them to its ledger;
 * - wallet mode: 202 with an unsigned envelope (2.5) of real Aave V3 calls;
 *   nothing changes until every step of it is relayed (relay-service.ts).
 *
 * Rules: the safety rail refuses a borrow above the ceiling (403) before any
 * envelope exists; a treasury with an envelope awaiting signature (or a Safe
 * transaction awaiting its owners) refuses a new action (409
 * conflicting_operation) until it is relayed, executed or expired.
 */
import { planSteps } from "../chain/envelope-plan";
import { ChainGateway, chainAsPosition, chainHealthScore, type ChainPosition } from "../chain/chain-gateway";
import { NonceHints } from "../chain/nonce-hints";
import { SandboxChain } from "../chain/sandbox-chain";
import { AAVE_MARKETS } from "../../../contracts-abi/chains";
import { declarationOf, type TreasuryAction } from "../actions";
import { PlanRefusal, type ActionDeclaration, type PriceOf } from "../actions/declaration";
import { ASSETS, sandboxUnitsFor, sandboxValueMicro, type AssetSymbol } from "../domain/assets";
import { feeFor, type Fee } from "../domain/fees";
import { formatDecimal, usdcToNumber, type Micro } from "../domain/money";
import { positionOf } from "../domain/portfolio";
import { healthScore, ltvPct, PositionError, simulate, type Simulation } from "../domain/position";
import { PRESETS, type Preset } from "../domain/presets";
import { LedgerError, type ActionParams, type LedgerResult } from "../domain/sandbox-ledger";
import { TreasuryError } from "../lib/errors";
import { newId } from "../lib/ids";
import type { EnvelopeRecord, StepRecord } from "../store/envelope-store";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import { ExecutionRecorder } from "./execution-recorder";
import { safetyRailError } from "./preview-service";
import { isSafesOwnRegistration, notSafesRegistration, SAFE_TX_TTL_MS, safeTransactionRef } from "./safe-transaction-service";
import { safeTxFor, safeTxHash } from "../chain/safe-transaction";

export const ENVELOPE_TTL_MS = 15 * 60 * 1000;

export interface ActionRequest {
  action: TreasuryAction;
  amountMicro: Micro;
  params: ActionParams;
}

export interface Plan {
  request: ActionRequest;
  fee: Fee;
  /** the sandbox ledger after the action; null for a chain-backed treasury (the chain is the ledger) */
  ledger: LedgerResult | null;
  ltvBefore: number;
  ltvAfter: number;
  healthAfter: number;
  debtAfterMicro: Micro;
}

/** the step that is the action's own Aave Pool call: what the envelope's unsigned_transaction holds */
export function mainStep(steps: StepRecord[]): StepRecord {
  return steps.find((s) => s.kind === "pool_call")!;
}

/** another action of the treasury holds its slot */
const slotBusy = () => new TreasuryError("conflicting_operation", "another action of this treasury is in progress; retry when it has finished (nothing was charged)", {}, { "Retry-After": "1" });

/**
 * The safety rail's refusal (spec 2.2); for an amount in a token (withdraw of ETH, say) `safe_amount` is in the
 * request's own unit, so retrying with it passes, and never more than is supplied.
 */
function railError(d: ActionDeclaration<TreasuryAction>, sim: Simulation, preset: Preset, request: ActionRequest, price: PriceOf | null): TreasuryError {
  const err = safetyRailError(sim, preset);
  if (!d.safeUnits || !price) return err;
  const safe = d.safeUnits(request.params, sim.breach!.safeAmountMicro, price);
  return new TreasuryError(
    err.code,
    `this ${request.action} would take LTV from ${sim.ltvBefore}% to ${sim.ltvAfter}%, above the ${preset.ceiling}% ceiling; the most that stays within it is ${safe.amount} ${safe.asset}`,
    { ...err.fields, safe_amount: Number(safe.amount), safe_amount_usdc: usdcToNumber(sim.breach!.safeAmountMicro), asset: safe.asset },
  );
}

/** what `units` of one asset buy of another at the sandbox's prices */
function sandboxSwap(from: AssetSymbol, to: AssetSymbol, units: bigint): bigint {
  const value = from === "USDC" ? units : sandboxValueMicro(from, units);
  return to === "USDC" ? value : sandboxUnitsFor(to, value);
}

/** a simulation whose action cannot apply to the position (more collateral out than there is) is a typed 400 */
function simulated(run: () => Simulation): Simulation {
  try {
    return run();
  } catch (err) {
    if (err instanceof PositionError) throw new TreasuryError(err.code, err.message);
    throw err;
  }
}

/** a sandbox key's managed treasury: a simulated ledger in the store, never chain-backed, never an x402 payer's */
const onLedgerOnly = (t: TreasuryRecord): boolean => t.origin === "sandbox_key" && t.executionMode === "managed";

/**
 * Did this registration prove its wallet? `proven`: a signed ownership
 * statement (EIP-712, or the Safe's EIP-1271), or the Safe's own safe_proof of
 * a delegation; `paid`: created by the wallet's own x402 payment, whose
 * EIP-3009 authorization the wallet signed (invariant 1 lets it stand for the
 * wallet the same way). An `unproven` registration is anyone's claim on an
 * address: nothing the service does on a chain may follow from it.
 */
export const provedWallet = (t: TreasuryRecord): boolean => t.ownership === "proven" || t.ownership === "paid";

/** a managed registration without proof: its actions apply to a sandbox ledger of its own, never to the wallet's chain state */
const ownLedger = (t: TreasuryRecord): boolean => t.executionMode === "managed" && t.origin !== "sandbox_key" && !provedWallet(t);

/** what a managed action of an unproven registration says it did */
const OWN_LEDGER_EXECUTION = {
  simulated: true,
  ledger: "own_sandbox_ledger",
  reason: "ownership_unproven",
  how: "applied to this registration's own sandbox ledger; nothing was sent and the wallet's chain state was neither read nor changed: the registration did not prove its wallet (ownership unproven), and the service acts on a wallet's chain position only for a registration that proved it (ownership_proof at registration, or the wallet's own x402 payment)",
} as const;

/** how many treasuries' storeOnly answers are kept (oldest forgotten first) */
const LEDGER_ONLY_MEMORY = 10_000;


export class ActionService {
  readonly recorder: ExecutionRecorder;

  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "envelopes" | "executions" | "fees" | "safeTransactions" | "slots" | "treasuries">,
    private readonly nonces: NonceHints = new NonceHints({}, 1),
    readonly chain: ChainGateway = new ChainGateway({}, 1),
    readonly sandbox: SandboxChain = new SandboxChain(chain, "off", []),
  ) {
    this.recorder = new ExecutionRecorder(ctx);
  }

  /**
   * Does the sandbox provide for this treasury (chain/sandbox-chain.ts:
   * funding, impersonated managed runs, steps provided without a signature)?
   * Only for a registration that proved its wallet (proven, or paid by the
   * wallet's own x402 payment), chain-backed on a local Anvil, whose wallet is
   * an account (no code); never for an unproven registration (anyone can name
   * anyone's address) nor for an operator's Safe (funded and run by its owners).
   */
  async sandboxed(t: TreasuryRecord): Promise<boolean> {
    return provedWallet(t) && this.chainBacked(t) && t.origin !== "operator" && (await this.sandbox.active(t.chain)) && !(await this.isContract(t));
  }

  /**
   * A managed action on a Safe is queued only for the Safe's own registration
   * (the managed treasury the Safe itself proved): the SafeTx hash does not
   * name the treasury, so another registration's item would take the owners'
   * signatures meant for the Safe's own. Refused before anything is written.
   */
  private async refuseForeignSafe(t: TreasuryRecord): Promise<void> {
    if (t.executionMode !== "managed" || t.origin === "sandbox_key" || !this.chain.connected(t.chain)) return;
    let contract: boolean;
    try {
      contract = await this.isContract(t);
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the code at ${t.walletAddress} on ${t.chain}: ${(err as Error).message.split("\n")[0]}`);
    }
    if (contract && !(await isSafesOwnRegistration(this.ctx.stores.treasuries, t.id, t.walletAddress))) {
      throw notSafesRegistration(t.id, t.walletAddress, "a managed action on the Safe is not queued for it (nothing was stored)");
    }
  }

  /** a contract wallet (a Safe): run by its owners, never funded or impersonated by the sandbox */
  private readonly contracts = new Map<string, Promise<boolean>>();
  isContract(t: TreasuryRecord): Promise<boolean> {
    const id = `${t.chain}:${t.walletAddress.toLowerCase()}`;
    let known = this.contracts.get(id);
    if (!known) {
      known = this.chain
        .client(t.chain)
        .getCode({ address: t.walletAddress })
        .then((code) => code !== undefined && code !== "0x");
      this.contracts.set(id, known);
      // only "a contract" is kept: an address without code may be a Safe deployed later
      known.then((yes) => yes || this.contracts.delete(id), () => this.contracts.delete(id));
    }
    return known;
  }

  /** on the sandbox's chain: gas ETH and the USDC the action takes, so any new wallet can try every action; true when it changed a balance */
  async fundForAction(t: TreasuryRecord, request: { action: TreasuryAction; amountMicro: Micro }): Promise<boolean> {
    if (!(await this.sandboxed(t))) return false;
    const usdcNeeded = declarationOf(request.action).sandboxUsdcMicro(request.amountMicro);
    try {
      const funded = await this.sandbox.fund(t.chain, AAVE_MARKETS[t.chain].usdc, t.walletAddress, usdcNeeded);
      return funded.gas_eth_set || funded.usdc_added_micro > 0n;
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `the sandbox could not fund ${t.walletAddress} on ${t.chain}: ${(err as Error).message}`);
    }
  }

  /**
   * A treasury whose chain has an RPC reads its position from the chain, not
   * the sandbox ledger: wallet-mode treasuries (nothing moves without the
   * wallet's own signatures) and managed ones that proved their wallet (the
   * operator's Safe, a proven sandbox wallet). Demo treasuries of sandbox keys
   * and unproven managed registrations keep a ledger of their own.
   */
  chainBacked(t: TreasuryRecord): boolean {
    return this.chain.connected(t.chain) && t.origin !== "sandbox_key" && !ownLedger(t);
  }

  async chainPosition(t: TreasuryRecord): Promise<ChainPosition | null> {
    return this.chainBacked(t) ? this.chain.position(t.chain, t.walletAddress) : null;
  }

  async treasury(id: string): Promise<TreasuryRecord> {
    const t = await this.ctx.stores.treasuries.get(id);
    if (!t) throw new TreasuryError("treasury_not_found", `treasury ${id} does not exist`);
    return t;
  }

  /** what storeOnly answered per treasury: a treasury's origin and execution mode never change after it is created */
  private readonly ledgerOnly = new Map<string, boolean>();

  /** the treasury's actions change nothing but the store (a sandbox key's ledger): one transaction can hold a whole request */
  async storeOnly(treasuryId: string): Promise<boolean> {
    let known = this.ledgerOnly.get(treasuryId);
    if (known === undefined) {
      known = onLedgerOnly(await this.treasury(treasuryId));
      if (this.ledgerOnly.size >= LEDGER_ONLY_MEMORY) this.ledgerOnly.delete(this.ledgerOnly.keys().next().value!);
      this.ledgerOnly.set(treasuryId, known);
    }
    return known;
  }

  /**
   * Every check perform() makes, and the treasury's conflict slot claimed for
   * `holder` in the same transaction: after this, no other action of the
   * treasury can start until the release is called (or the slot expires). A
   * paid request reserves before its payment is settled, so a request that
   * would be refused or conflicted is never charged.
   */
  async reserve(treasuryId: string, request: ActionRequest, holder: string): Promise<() => Promise<void>> {
    const t = await this.treasury(treasuryId);
    if (onLedgerOnly(t)) {
      // never paid, nothing outside the store: the checks now (a refusal answers before anything is written),
      // then perform does them again and the action in one transaction, with no slot claimed around it
      await this.guard(t, request, this.ctx.clock.now(), null);
      return async () => {};
    }
    // the sandbox's funding looks at two balances and the position is read meanwhile: read again only if it funded.
    // The Safe check runs alongside (one getCode shared with the funding's): the wallet it refuses is a contract,
    // which the sandbox never funds, so nothing is written before the refusal
    const [, funded, position] = await Promise.all([this.refuseForeignSafe(t), this.fundForAction(t, request), this.chainPosition(t)]);
    const chain = funded ? await this.chainPosition(t) : position;
    await this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      await this.guard(await this.treasury(treasuryId), request, now, chain);
      if (!await this.ctx.stores.slots.claim(treasuryId, holder, now)) {
        throw slotBusy();
      }
    });
    return () => this.ctx.stores.slots.release(treasuryId, holder);
  }

  private async guard(treasury: TreasuryRecord, request: ActionRequest, now: Date, chain: ChainPosition | null): Promise<Plan> {
    const minimum = declarationOf(request.action).minimumMicro;
    if (minimum !== undefined && request.amountMicro < minimum) {
      const least = formatDecimal(minimum, 6);
      throw new TreasuryError("invalid_request", `the minimum ${request.action} is ${least} USDC`, { details: [{ location: "body", field: "amount_usdc", message: `must be at least ${least}` }] });
    }
    const pending = await this.ctx.stores.envelopes.pendingFor(treasury.id, now.toISOString());
    if (pending) {
      throw new TreasuryError("conflicting_operation",
        `envelope ${pending.txId} (${pending.action}) is awaiting signature until ${pending.expiresAt}; relay it or let it expire before a new action`,
        { pending_tx_id: pending.txId, pending_action: pending.action, pending_expires_at: pending.expiresAt },
      );
    }
    const queued = await this.ctx.stores.safeTransactions.openFor(treasury.id, now.toISOString());
    if (queued) {
      throw new TreasuryError("conflicting_operation",
        `Safe transaction ${queued.id} (${queued.action}) is ${queued.status === "executing" ? "executing" : `awaiting the Safe owners' signatures until ${queued.expiresAt}`}; a new action waits for it`,
        { pending_safe_transaction_id: queued.id, pending_action: queued.action, pending_status: queued.status },
      );
    }
    return this.plan(treasury, request, chain);
  }

  /**
   * Run an action for a treasury; returns the HTTP status and body. The
   * caller either holds the treasury's slot (`holder`, from reserve) or
   * perform reserves and releases it itself.
   */
  async perform(treasuryId: string, request: ActionRequest, trigger: string, holder?: string): Promise<{ status: 200 | 202; body: Record<string, unknown> }> {
    if (!holder || !await this.ctx.stores.slots.holds(treasuryId, holder)) {
      if (await this.storeOnly(treasuryId)) return this.performOnLedger(treasuryId, request, trigger);
      const own = `perform_${newId("tx").slice(3)}`;
      const release = await this.reserve(treasuryId, request, own);
      try {
        return await this.perform(treasuryId, request, trigger, own);
      } finally {
        await release();
      }
    }
    const before = await this.treasury(treasuryId);
    // read again after the reservation (a paid request settled in between: the action is checked on the chain as
    // it is now, test/security/prepaid-retry.test.ts), together with the wallet's next nonce
    const [chain, nonce] = await Promise.all([this.chainPosition(before), before.executionMode === "wallet" ? this.nonces.next(before.chain, before.walletAddress) : null]);
    const planned = await this.guard(before, request, this.ctx.clock.now(), chain);
    // a managed sandbox treasury on the local chain: its steps run on the fork, sent as the wallet (impersonated)
    const onChain = before.executionMode === "managed" && chain && (await this.sandboxed(before)) ? await this.runOnSandbox(before, planned) : null;
    // an operator's Safe: the action becomes a Safe transaction its owners sign (at the Safe's nonce now)
    const safeNonce = before.executionMode === "managed" && chain && !onChain && (await this.isContract(before)) ? await this.chain.safeNonce(before.chain, before.walletAddress) : null;
    return await this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      const treasury = await this.treasury(treasuryId);
      if (treasury.executionMode === "managed") {
        if (onChain) {
          const plan: Plan = { ...planned, ltvAfter: ltvPct(onChain.after), healthAfter: chainHealthScore(onChain.after), debtAfterMicro: onChain.after.debtMicro };
          const receipt = await this.execute(treasury, plan, { origin: "managed", envelopeTxId: null, trigger, settled: false }, now);
          return { status: 200 as const, body: { ...receipt, chain_execution: { simulated: false, chain: treasury.chain, how: "sandbox: each step sent from the wallet with anvil_impersonateAccount on the local fork", steps: onChain.steps, block_number: Number(onChain.after.blockNumber) } } };
        }
        const plan = await this.guard(treasury, request, now, chain);
        if (safeNonce !== null) {
          // checked again with the proposal: the Safe's own registration, as it is in this transaction
          if (!(await isSafesOwnRegistration(this.ctx.stores.treasuries, treasury.id, treasury.walletAddress))) {
            throw notSafesRegistration(treasury.id, treasury.walletAddress, "a managed action on the Safe is not queued for it (nothing was stored)");
          }
          return { status: 200 as const, body: await this.proposeOnSafe(treasury, plan, trigger, now, safeNonce) };
        }
        // an operator's wallet that is not a contract: computed on the position, not executed on chain, never settled volume;
        // an unproven registration: its own ledger
        const receipt = await this.execute(treasury, plan, { origin: "managed", envelopeTxId: null, trigger, settled: false }, now);
        const how = ownLedger(treasury)
          ? OWN_LEDGER_EXECUTION
          : { simulated: true, how: chain ? `computed on the wallet's Aave position on ${treasury.chain}; nothing was sent (the service holds no key of this wallet)` : "applied to the sandbox ledger; nothing was sent" };
        return { status: 200 as const, body: { ...receipt, chain_execution: how } };
      }
      const plan = await this.guard(treasury, request, now, chain);
      return { status: 202 as const, body: await this.createEnvelope(treasury, plan, now, nonce ?? { nonce: null, source: "none" }) };
    }).then(async (answer) => {
      if (answer.status === 202 && chain && (await this.sandboxed(before))) await this.prepareSandboxEnvelope(before, String(answer.body.tx_id));
      return answer;
    });
  }

  /**
   * A managed action of a sandbox key's treasury (onLedgerOnly) in one
   * database transaction: the treasury's slot must be free, then the checks,
   * the ledger, the receipt and its fee audit. The transaction itself
   * excludes a concurrent action of the treasury (SQLite's write lock,
   * PostgreSQL's serializable retry), so no slot is claimed and released
   * around it: two write transactions fewer than the reserve path. Such a
   * treasury is never a payer's (x402 payments resolve to proven or paid
   * treasuries), so no settled payment can meet a refusal here.
   */
  private async performOnLedger(treasuryId: string, request: ActionRequest, trigger: string): Promise<{ status: 200; body: Record<string, unknown> }> {
    return this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      if (!(await this.ctx.stores.slots.free(treasuryId, now))) {
        throw slotBusy();
      }
      const treasury = await this.treasury(treasuryId);
      const plan = await this.guard(treasury, request, now, null);
      const receipt = await this.execute(treasury, plan, { origin: "managed", envelopeTxId: null, trigger, settled: false }, now);
      return { status: 200 as const, body: { ...receipt, chain_execution: { simulated: true, how: "applied to the sandbox ledger; nothing was sent" } } };
    });
  }

  /**
   * A managed action on an operator's Safe (issue 15): the action's calls as
   * one Safe transaction at the Safe's current nonce, for its owners to sign
   * (services/safe-transaction-service.ts), executed by the service's
   * executor once signed. Its receipt is recorded now, with the spec's
   * status (`processing`, a borrow `approved`, a repay `processing` too: it has
   * not happened yet); its fee is audited only when it executes.
   */
  private async proposeOnSafe(t: TreasuryRecord, plan: Plan, trigger: string, now: Date, nonce: bigint): Promise<Record<string, unknown>> {
    const { request, fee } = plan;
    const planned = planSteps({ action: request.action, chain: t.chain, wallet: t.walletAddress, amountMicro: request.amountMicro, feeMicro: fee.feeMicro, feeRecipient: this.ctx.config.feeRecipient, params: request.params });
    const chainId = AAVE_MARKETS[t.chain].chainId;
    const safeTx = safeTxFor(chainId, planned, nonce);
    const hash = safeTxHash(chainId, t.walletAddress, safeTx);
    const id = newId("stx");
    const pending = safeTransactionRef(this.ctx.links, id, hash, "awaiting_signatures");
    const expiresAt = new Date(now.getTime() + SAFE_TX_TTL_MS).toISOString();
    const { executionId, receipt } = await this.recorder.recordReceipt({
      treasury: t,
      action: request.action,
      amountMicro: request.amountMicro,
      fee,
      origin: "managed",
      envelopeTxId: null,
      trigger,
      settled: false,
      executionId: newId(declarationOf(request.action).idPrefix),
      receipt: (eid) => ({ ...this.receipt(eid, plan, now.toISOString()), status: declarationOf(request.action).proposedStatus, safe_transaction: pending }),
      at: now,
    });
    await this.ctx.stores.safeTransactions.insert({
      id,
      treasuryId: t.id,
      executionId,
      chain: t.chain,
      safe: t.walletAddress,
      action: request.action,
      amountMicro: request.amountMicro,
      feeMicro: fee.feeMicro,
      request: { params: request.params as Record<string, unknown>, feeBps: Number(fee.feeBps), feeBasis: fee.basis, trigger },
      safeTx,
      safeTxHash: hash,
      calls: planned.map((p) => ({ kind: p.kind, to: p.to, value: p.value, data: p.data, summary: p.summary as unknown as Record<string, unknown> })),
      signatures: [],
      status: "awaiting_signatures",
      holder: null,
      leaseExpiresAt: null,
      sent: null,
      txHash: null,
      failure: null,
      gasUsd: null,
      createdAt: now.toISOString(),
      expiresAt,
      updatedAt: now.toISOString(),
    });
    return {
      ...receipt,
      chain_execution: {
        simulated: false,
        chain: t.chain,
        how: `a Safe transaction of ${planned.length} call${planned.length === 1 ? "" : "s"} for the Safe's owners to sign until ${expiresAt}; the service executes it once the Safe's threshold signed, after checking the safety rail again against the position at that moment`,
        safe_transaction: pending,
      },
    };
  }

  /**
   * In the sandbox, an envelope's main call is made estimable before its
   * prerequisites are signed (SandboxChain.prepare), so a client that fills
   * gas with eth_estimateGas can sign the one unsigned_transaction.
   */
  private async prepareSandboxEnvelope(t: TreasuryRecord, envelopeTxId: string): Promise<void> {
    const steps = await this.ctx.stores.envelopes.steps(envelopeTxId);
    const main = mainStep(steps);
    const prepared: string[] = [];
    for (const s of steps) {
      if (s.seq >= main.seq) continue;
      const done = await this.sandbox.prepare(t.chain, t.walletAddress, s).catch(() => null);
      if (done) prepared.push(`${s.seq}:${done}`);
    }
    if (prepared.length === 0) return;
    const envelope = (await this.ctx.stores.envelopes.get(envelopeTxId))!;
    await this.ctx.stores.envelopes.setParams(envelopeTxId, { ...envelope.params, sandbox_prepared: prepared });
  }

  /**
   * Run a managed sandbox action's steps on the local fork, in order, each sent
   * from the wallet by impersonation and mined before the next. A swap the
   * fork's pool cannot fill within its slippage is provided at the quote
   * (storage writes, labelled so). Returns what ran and the position after.
   */
  private async runOnSandbox(t: TreasuryRecord, plan: Plan): Promise<{ steps: Record<string, unknown>[]; after: ChainPosition }> {
    const planned = planSteps({
      action: plan.request.action,
      chain: t.chain,
      wallet: t.walletAddress,
      amountMicro: plan.request.amountMicro,
      feeMicro: plan.fee.feeMicro,
      feeRecipient: this.ctx.config.feeRecipient,
      params: plan.request.params,
    });
    const steps: Record<string, unknown>[] = [];
    for (const s of planned) {
      if (s.kind === "swap" && !(await this.sandbox.wouldSucceed(t.chain, t.walletAddress, s))) {
        steps.push({ kind: s.kind, description: s.summary.description, ...(await this.sandbox.provide(t.chain, t.walletAddress, s)) });
        continue;
      }
      const r = await this.sandbox.sendAs(t.chain, t.walletAddress, s).catch((err: unknown) => ({ status: "error" as const, error: (err as Error).message }));
      if (r.status !== "success") {
        throw new TreasuryError("sandbox_execution_failed", `the ${s.kind} step (${s.summary.description}) did not execute on the local fork; the steps before it did: nothing was recorded`, {
          executed_steps: steps,
          failed_step: { kind: s.kind, ...("hash" in r ? { tx_hash: r.hash } : { error: r.error }) },
        });
      }
      steps.push({ kind: s.kind, description: s.summary.description, tx_hash: r.hash, block_number: Number(r.blockNumber), gas_used: Number(r.gasUsed), status: "mined" });
    }
    return { steps, after: await this.chain.position(t.chain, t.walletAddress) };
  }

  /**
   * Fee, safety rail and balance checks, without writing anything. A
   * chain-backed treasury is checked against its position as Aave reports it
   * and its wallet's USDC; a sandbox treasury against its simulated ledger.
   */
  async plan(treasury: TreasuryRecord, given: ActionRequest, chain: ChainPosition | null = null, signedFee?: Fee): Promise<Plan> {
    const preset = PRESETS[treasury.preset];
    const tier = (await this.ctx.stores.fees.ratchet()).tierIndex;
    const d = declarationOf(given.action);
    // an action planned on the chain's own figures (exit) first: its params from the wallet's market and the pool's quotes
    const planned = d.planOnChain && chain ? await this.planOnChain(treasury, d, given) : given;
    // an amount in a token (withdraw of ETH, say) is valued at the chain's oracle, or on a ledger at the sandbox's price
    const price: PriceOf | null = d.valueMicro ? await this.priceOf(treasury, chain) : null;
    const request = d.valueMicro && price ? { ...planned, amountMicro: d.valueMicro(planned.params, price) } : { ...planned };
    if (chain) {
      const position = chainAsPosition(chain)!;
      const needs = d.walletNeeds(request.amountMicro, chain, request.params);
      if (needs.refusal) throw new TreasuryError(needs.refusal.code, needs.refusal.message);
      const sim = simulated(() => simulate(position, d, request.amountMicro, preset, tier));
      if (sim.breach) throw railError(d, sim, preset, request, price);
      // Aave's own rule after a downward leg: a health factor under 1 reverts (the rail's ceilings are under every liquidation threshold, so it holds)
      if (d.direction === "down" && sim.after.debtMicro > 0n && sim.healthAfter < 1) {
        throw new TreasuryError("transaction_would_revert", `Aave refuses this ${request.action}: the health factor would fall to ${sim.healthAfter}, under 1`);
      }
      const usdcNeeded = needs.usdcMicro;
      if (chain.holdings.walletUsdc < usdcNeeded) {
        throw new TreasuryError("insufficient_balance", `the wallet holds ${formatDecimal(chain.holdings.walletUsdc, 6)} USDC on ${treasury.chain}; this ${request.action} needs ${formatDecimal(usdcNeeded, 6)}`);
      }
      // an action that swaps is bounded under the pool's quote now (QuoterV2)
      return { request: await this.quoted(treasury, d, request, sim.fee.feeMicro), fee: sim.fee, ledger: null, ltvBefore: sim.ltvBefore, ltvAfter: sim.ltvAfter, healthAfter: sim.healthAfter, debtAfterMicro: sim.after.debtMicro };
    }
    const before = positionOf(treasury.holdings);
    const sim = simulated(() => simulate(before, d, request.amountMicro, preset, tier));
    if (sim.breach) throw railError(d, sim, preset, request, price);
    // on a ledger an action that swaps fills at the sandbox's price
    const q = d.quote?.(request.params, request.amountMicro, sim.fee.feeMicro);
    if (q) request.params = { ...request.params, quoted: sandboxSwap(q.from, q.to, q.units).toString() };
    // a relayed envelope applies the fee it was signed with, not today's tier
    const fee = signedFee ?? sim.fee;
    let ledger: LedgerResult;
    try {
      ledger = declarationOf(request.action).ledger(treasury.holdings, request.amountMicro, fee.feeMicro, request.params);
    } catch (err) {
      if (err instanceof LedgerError) throw new TreasuryError(err.code, err.message);
      throw err;
    }
    const after = positionOf(ledger.holdings);
    return { request, fee, ledger, ltvBefore: ltvPct(before), ltvAfter: ltvPct(after), healthAfter: healthScore(after), debtAfterMicro: ledger.holdings.debtMicro };
  }

  /** the request of an action planned on the chain's figures (exit), its params made from the wallet's market now */
  private async planOnChain(treasury: TreasuryRecord, d: ActionDeclaration<TreasuryAction>, request: ActionRequest): Promise<ActionRequest> {
    const snapshot = await this.chain.marketSnapshot(treasury.chain, treasury.walletAddress);
    try {
      return { ...request, params: await d.planOnChain!(request.params, snapshot, (from, units) => this.chain.quote(treasury.chain, from, "USDC", units)) };
    } catch (err) {
      if (err instanceof PlanRefusal) throw new TreasuryError("insufficient_balance", err.message);
      throw err;
    }
  }

  /** on a chain, the request with the pool's quote of what it swaps (params.quoted), for an action that swaps */
  private async quoted(treasury: TreasuryRecord, d: ActionDeclaration<TreasuryAction>, request: ActionRequest, feeMicro: Micro): Promise<ActionRequest> {
    const q = d.quote?.(request.params, request.amountMicro, feeMicro);
    if (!q || q.units <= 0n) return request;
    return { ...request, params: { ...request.params, quoted: (await this.chain.quote(treasury.chain, q.from, q.to, q.units)).toString() } };
  }

  /** the prices an amount in a token is valued at: the chain's Aave oracle for a chain-backed treasury, else the sandbox's */
  private async priceOf(treasury: TreasuryRecord, chain: ChainPosition | null): Promise<PriceOf> {
    if (!chain) return (symbol) => ASSETS[symbol].sandboxPriceMicro;
    const prices = await this.chain.pricesMicro(treasury.chain);
    return (symbol) => prices[symbol];
  }

  /**
   * Apply a planned action: the sandbox ledger (if any), the execution and
   * its fee audit through the one recorder, in the caller's transaction.
   * Returns the receipt (2.4).
   */
  async execute(
    treasury: TreasuryRecord,
    plan: Plan,
    how: { origin: "managed" | "relay"; envelopeTxId: string | null; trigger: string; settled: boolean },
    now: Date,
  ): Promise<Record<string, unknown>> {
    const { request, fee, ledger } = plan;
    if (ledger) await this.ctx.stores.treasuries.updateHoldings(treasury.id, ledger.holdings, now.toISOString());
    const { receipt } = await this.recorder.record({
      treasury,
      action: request.action,
      amountMicro: request.amountMicro,
      fee,
      origin: how.origin,
      envelopeTxId: how.envelopeTxId,
      trigger: how.trigger,
      settled: how.settled,
      executionId: newId(declarationOf(request.action).idPrefix),
      receipt: (id) => this.receipt(id, plan, now.toISOString()),
      at: now,
    });
    return receipt!;
  }

  /** the fee of an envelope, exactly as it was planned and signed */
  envelopeFee(envelope: EnvelopeRecord): Fee {
    if (envelope.feeBps !== null && envelope.feeBasis !== null) return { feeMicro: envelope.feeMicro, feeBps: BigInt(envelope.feeBps), basis: envelope.feeBasis };
    // envelopes from before the fee was kept with them: the amount is theirs, the basis of their action
    const f = feeFor(declarationOf(envelope.action).fee, envelope.amountMicro, 0);
    return { ...f, feeMicro: envelope.feeMicro };
  }

  /**
   * Record an envelope whose transactions were broadcast and mined: the chain
   * already holds the result, so no rail and no sandbox ledger, only the
   * execution and the fee audit with the envelope's own fee and the figures
   * read back from the chain.
   */
  recordChainExecution(treasury: TreasuryRecord, envelope: EnvelopeRecord, after: ChainPosition, now: Date): Promise<Record<string, unknown>> {
    const plan: Plan = {
      request: { action: envelope.action, amountMicro: envelope.amountMicro, params: envelope.params as ActionParams },
      fee: this.envelopeFee(envelope),
      ledger: null,
      ltvBefore: typeof envelope.params.ltv_before === "number" ? envelope.params.ltv_before : 0,
      ltvAfter: ltvPct(after),
      healthAfter: chainHealthScore(after),
      debtAfterMicro: after.debtMicro,
    };
    return this.execute(treasury, plan, { origin: "relay", envelopeTxId: envelope.txId, trigger: "relayed_signature", settled: true }, now);
  }

  private receipt(id: string, plan: Plan, createdAt: string): Record<string, unknown> {
    const { request, fee, ledger } = plan;
    const common = {
      sandbox: true,
      object: "action_receipt",
      action: request.action,
      amount_usdc: usdcToNumber(request.amountMicro),
      fee_usdc: usdcToNumber(fee.feeMicro),
      ltv_before: plan.ltvBefore,
      ltv_after: plan.ltvAfter,
      health_score_after: plan.healthAfter,
      created_at: createdAt,
    };
    const d = declarationOf(request.action);
    return {
      ...common,
      ...d.receipt({ id, amountMicro: request.amountMicro, fee, params: request.params, ledger, ltvBefore: plan.ltvBefore, debtAfterMicro: plan.debtAfterMicro }),
      status: d.status,
    };
  }

  private async createEnvelope(treasury: TreasuryRecord, plan: Plan, now: Date, nonce: { nonce: number | null; source: string }): Promise<Record<string, unknown>> {
    const planned = planSteps({
      action: plan.request.action,
      chain: treasury.chain,
      wallet: treasury.walletAddress,
      amountMicro: plan.request.amountMicro,
      feeMicro: plan.fee.feeMicro,
      feeRecipient: this.ctx.config.feeRecipient,
      params: plan.request.params,
    });
    const market = AAVE_MARKETS[treasury.chain];
    const stepIds = planned.map(() => newId("tx"));
    // the envelope's own id: relaying the one unsigned_transaction under it is the one-signature path (relay-service.ts)
    const envelopeTxId = newId("tx");
    const envelope: EnvelopeRecord = {
      txId: envelopeTxId,
      treasuryId: treasury.id,
      action: plan.request.action,
      amountMicro: plan.request.amountMicro,
      feeMicro: plan.fee.feeMicro,
      feeBps: Number(plan.fee.feeBps),
      feeBasis: plan.fee.basis,
      params: plan.request.params as Record<string, unknown>,
      chain: treasury.chain,
      chainId: market.chainId,
      status: "awaiting_signature",
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + ENVELOPE_TTL_MS).toISOString(),
      completedAt: null,
    };
    if (nonce.nonce !== null) envelope.params = { ...envelope.params, nonce_base: nonce.nonce };
    envelope.params = { ...envelope.params, ltv_before: plan.ltvBefore };
    const steps: StepRecord[] = planned.map((p, i) => ({
      txId: stepIds[i]!,
      envelopeTxId,
      seq: i,
      kind: p.kind,
      to: p.to,
      data: p.data,
      value: p.value,
      summary: p.summary as unknown as Record<string, unknown>,
      status: "awaiting_signature",
      txHash: null,
      signedTransaction: null,
      receipt: null,
      relayedAt: null,
      signer: null,
      txNonce: null,
      broadcastAt: null,
      failedAttempts: [],
    }));
    await this.ctx.stores.envelopes.insert(envelope, steps);
    return this.envelopeView(envelope, steps, plan, nonce.source);
  }

  /** spec 2.5, plus the ordered steps, chain id and decoded summaries */
  envelopeView(envelope: EnvelopeRecord, steps: StepRecord[], plan?: Plan, nonceSource?: string): Record<string, unknown> {
    const main = mainStep(steps);
    const base = typeof envelope.params.nonce_base === "number" ? envelope.params.nonce_base : null;
    const tx = (s: StepRecord, nonce = base === null ? null : base + s.seq) => ({ chain: envelope.chain, chain_id: envelope.chainId, to: s.to, data: s.data, value: s.value, nonce });
    return {
      sandbox: true,
      object: "unsigned_transaction",
      tx_id: envelope.txId,
      treasury_id: envelope.treasuryId,
      action: envelope.action,
      amount_usdc: usdcToNumber(envelope.amountMicro),
      fee_usdc: usdcToNumber(envelope.feeMicro),
      ...(plan ? { ltv_before: plan.ltvBefore, ltv_after: plan.ltvAfter } : {}),
      status: envelope.status,
      // signed alone (one signature), it is the wallet's next transaction
      unsigned_transaction: { ...tx(main, base), summary: main.summary },
      expires_at: envelope.expiresAt,
      created_at: envelope.createdAt,
      steps: steps.map((s) => ({ tx_id: s.txId, seq: s.seq, kind: s.kind, status: s.status, unsigned_transaction: tx(s), summary: s.summary })),
      relay: {
        url: this.ctx.links.url("/api/v1/relay"),
        order: "relay every step in seq order, each with its own tx_id and a fresh Idempotency-Key; the action executes when the last step is relayed",
        one_signature:
          "or sign only unsigned_transaction with the wallet's next nonce and relay it under this envelope's tx_id: in the sandbox (a local test chain) the other steps are provided without a signature (the fee moved from the wallet to the fee recipient); elsewhere the relay answers 409 prerequisite_steps_required naming them",
        nonce: base === null ? `fill the wallet's next nonces in step order (no hint: ${nonceSource ?? "unknown"})` : `hints from ${nonceSource ?? "the chain"}: the pending count plus the step's seq`,
      },
    };
  }
}
