/**
 * Treasury actions (spec 4.5): deposit, convert, borrow, repay and the rest of
 * the declared actions (actions/*.ts), carried out by the strategy of the
 * treasury's execution mode (execution/modes.ts):
 *
 * - managed mode: executed at once, with the receipt of 2.4. On an operator's
 *   Safe the action becomes a Safe transaction for its owners to sign,
 *   executed by the service once signed (status processing -> completed |
 *   failed), and only for the registration the Safe itself proved (another is
 *   refused, ownership_not_proven); a sandbox wallet on the local fork whose
 *   registration proved it runs its steps at once; a simulated treasury (a
 *   sandbox key's, or an unproven registration's: its own ledger, never the
 *   wallet's chain state) applies them to its ledger;
 * - wallet mode: an unsigned envelope (2.5) of real Aave V3 calls; nothing
 *   changes until every step of it is relayed (relay-service.ts).
 *
 * Rules: the safety rail refuses a borrow above the ceiling before any
 * envelope exists; a treasury with an envelope awaiting signature (or a Safe
 * transaction awaiting its owners) refuses a new action (conflicting_operation)
 * until it is relayed, executed or expired. `perform` returns an outcome with a
 * kind (execution/strategy.ts), never an HTTP status.
 */
import { declarationOf } from "@treasury/core/actions";
import { formatDecimal } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import { ChainGateway, type ChainPosition } from "../chain/chain-gateway";
import { NonceHints } from "../chain/nonce-hints";
import { SandboxChain } from "../chain/sandbox-chain";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import { EnvelopeLifecycle } from "./envelopes/lifecycle";
import { SandboxSteps } from "./envelopes/sandbox-steps";
import { ExecutionRecorder } from "./execution-recorder";
import { onLedgerOnly, TreasuryBacking } from "./execution/backing";
import { executionModes, modeFor, type ModeTable } from "./execution/modes";
import { Planner, type ActionRequest, type Plan } from "./execution/planner";
import type { ActionOutcome, ModeRun } from "./execution/strategy";

export type { ActionRequest, Plan } from "./execution/planner";

/** what reserve made for a holder: the plan (quote included), the position it was made on (null: a ledger), the slot's release */
export interface Reservation {
  treasuryId: string;
  plan: Plan;
  chain: ChainPosition | null;
  release(): Promise<void>;
}
export type { ActionOutcome } from "./execution/strategy";

/** another action of the treasury holds its slot */
const slotBusy = () =>
  new TreasuryError(
    "conflicting_operation",
    "another action of this treasury is in progress; retry when it has finished (nothing was charged)",
    {},
    { "Retry-After": "1" },
  );

type Ctx = ServiceContext<"apiKeys" | "envelopes" | "events" | "executions" | "fees" | "safeTransactions" | "slots" | "treasuries">;

export class ActionService {
  readonly backing: TreasuryBacking;
  readonly planner: Planner;
  readonly recorder: ExecutionRecorder;
  readonly sandboxSteps: SandboxSteps;
  /** an envelope's life, shared with the relay */
  readonly envelopes: EnvelopeLifecycle;
  private readonly modes: ModeTable;
  /** the reservations of this process's requests, by holder, until released */
  private readonly reserved = new Map<string, Reservation>();

  constructor(
    private readonly ctx: Ctx,
    private readonly nonces: NonceHints = new NonceHints({}, 1),
    readonly chain: ChainGateway = new ChainGateway({}, 1),
    readonly sandbox: SandboxChain = new SandboxChain(chain, "off", []),
  ) {
    this.backing = new TreasuryBacking(ctx, chain, sandbox);
    this.planner = new Planner(ctx, chain);
    this.recorder = new ExecutionRecorder(ctx);
    this.sandboxSteps = new SandboxSteps(ctx, sandbox);
    this.envelopes = new EnvelopeLifecycle(ctx, {
      backing: this.backing,
      planner: this.planner,
      recorder: this.recorder,
      sandboxSteps: this.sandboxSteps,
      chain,
    });
    this.modes = executionModes({
      ctx,
      backing: this.backing,
      recorder: this.recorder,
      envelopes: this.envelopes,
      sandboxSteps: this.sandboxSteps,
      chain,
      sandbox,
    });
  }

  treasury(id: string): Promise<TreasuryRecord> {
    return this.backing.treasury(id);
  }

  /** the plan of an action on a treasury (execution/planner.ts), as the Safe executor checks it again */
  plan(treasury: TreasuryRecord, request: ActionRequest, chain: ChainPosition | null = null): Promise<Plan> {
    return this.planner.plan(treasury, request, chain);
  }

  /** the treasury's actions change nothing but the store (mode `ledger`): one transaction can hold a whole request */
  storeOnly(treasuryId: string): Promise<boolean> {
    return this.backing.storeOnly(treasuryId);
  }

  /**
   * Every check perform() makes, and the treasury's conflict slot claimed for `holder`: the plan is made
   * once, here, before the store transaction (the position, the quote, the oracle's prices: every chain
   * read); the transaction re-checks only what the store decides (no envelope or Safe transaction pending)
   * and claims the slot. After this, no other action of the treasury can start until the release is called
   * (or the slot expires). A paid request reserves before its payment is settled, so a request that would
   * be refused or conflicted is never charged. The reservation, plan included, is what perform() carries out
   * for the same holder.
   */
  async reserve(treasuryId: string, request: ActionRequest, holder: string): Promise<Reservation> {
    const t = await this.backing.treasury(treasuryId);
    if (onLedgerOnly(t)) {
      // never paid, nothing outside the store: the checks now (a refusal answers before anything is written),
      // then perform does them again and the action in one transaction, with no slot claimed around it
      const plan = await this.guard(t, request, this.ctx.clock.now(), null);
      return { treasuryId, plan, chain: null, release: async () => {} };
    }
    // the position first, with the Safe check alongside (the wallet it refuses is a contract, which the sandbox never
    // funds); then the sandbox's funding, only for an action the position does not refuse outright (repay without debt,
    // withdraw of what is not supplied): a refused action leaves the wallet as it was. Read again only if it funded
    const [, position] = await Promise.all([this.backing.refuseForeignSafe(t), this.backing.chainPosition(t)]);
    const refused = position !== null && declarationOf(request.action).walletNeeds(request.amountMicro, position, request.params).refusal !== undefined;
    const funded = !refused && (await this.backing.fundForAction(t, request));
    const chain = await this.backing.asFundedOnSignature(t, request, funded ? await this.backing.chainPosition(t) : position);
    const plan = await this.guard(t, request, this.ctx.clock.now(), chain);
    await this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      await this.refusePending(await this.backing.treasury(treasuryId), now);
      if (!(await this.ctx.stores.slots.claim(treasuryId, holder, now))) throw slotBusy();
    });
    const reservation: Reservation = {
      treasuryId,
      plan,
      chain,
      release: async () => {
        this.reserved.delete(holder);
        await this.ctx.stores.slots.release(treasuryId, holder);
      },
    };
    this.reserved.set(holder, reservation);
    return reservation;
  }

  /**
   * Carry out an action for a treasury. The caller either holds the treasury's slot (`holder`, from
   * reserve, whose plan this carries out) or perform reserves and releases it itself; a ledger-only
   * treasury's action is one transaction, no slot.
   */
  async perform(treasuryId: string, request: ActionRequest, trigger: string, holder?: string): Promise<ActionOutcome> {
    const reserved = holder === undefined ? undefined : this.reserved.get(holder);
    if (reserved?.treasuryId === treasuryId) return this.run(reserved, trigger, holder!);
    if (await this.backing.storeOnly(treasuryId)) return this.runOnLedger(treasuryId, request, trigger);
    const own = `perform_${newId("tx").slice(3)}`;
    const reservation = await this.reserve(treasuryId, request, own);
    try {
      return await this.run(reservation, trigger, own);
    } finally {
      await reservation.release();
    }
  }

  /**
   * The reserved action, its slot held: its mode chosen and prepared, committed in one transaction that
   * re-checks only what the store decides (the slot still held, no envelope or Safe transaction pending,
   * the fee tier: a moved tier re-prices the fee, without the chain), then followed up.
   */
  private async run(reservation: Reservation, trigger: string, holder: string): Promise<ActionOutcome> {
    const { treasuryId, plan } = reservation;
    const request = plan.request;
    const before = await this.backing.treasury(treasuryId);
    const row = this.modes[before.executionMode];
    // a paid request's settlement ran between the reservation and now and moved the payer's USDC: the position is
    // read again and the plan checked on it (test/security/prepaid-retry.test.ts), together with the wallet's next
    // nonce when the mode hints it
    const paid = trigger === "x402_payment" && reservation.chain !== null;
    const [chain, nonce] = await Promise.all([
      paid ? this.backing.chainPosition(before).then((position) => this.backing.asFundedOnSignature(before, request, position)) : reservation.chain,
      row.some((s) => s.needsNonce) ? this.nonces.next(before.chain, before.walletAddress) : null,
    ]);
    const planned = paid && chain ? this.planner.confirm(before, plan, chain) : plan;
    const mode = await modeFor(this.modes, before, chain);
    const run: ModeRun = { treasuryId, request, trigger, before, chain, planned, nonce };
    const prepared = await mode.prepare(run);
    const outcome = await this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      if (!(await this.ctx.stores.slots.holds(treasuryId, holder))) throw slotBusy();
      const treasury = await this.backing.treasury(treasuryId);
      if (!prepared.recheck) return prepared.commit(treasury, planned, now);
      await this.refusePending(treasury, now);
      // on a chain, only the fee tier is the store's; a ledger is the store's own, planned on as it is now
      const committed = chain
        ? this.planner.repriced(treasury, planned, chain, (await this.ctx.stores.fees.ratchet()).tierIndex)
        : await this.planner.plan(treasury, request, null);
      return prepared.commit(treasury, committed, now);
    });
    await prepared.after?.(outcome);
    return outcome;
  }

  /**
   * A sandbox key's treasury (mode `ledger`) in one database transaction: the
   * treasury's slot must be free, then the checks, the ledger, the receipt
   * and its fee audit; two write transactions fewer than the reserve path.
   */
  private runOnLedger(treasuryId: string, request: ActionRequest, trigger: string): Promise<ActionOutcome> {
    return this.ctx.tx.transaction(async () => {
      const now = this.ctx.clock.now();
      if (!(await this.ctx.stores.slots.free(treasuryId, now))) throw slotBusy();
      const treasury = await this.backing.treasury(treasuryId);
      const plan = await this.guard(treasury, request, now, null);
      const mode = await modeFor(this.modes, treasury, null);
      const prepared = await mode.prepare({ treasuryId, request, trigger, before: treasury, chain: null, planned: plan, nonce: null });
      return prepared.commit(treasury, plan, now);
    });
  }

  /** the action's minimum, no envelope or Safe transaction pending, then its plan */
  private async guard(treasury: TreasuryRecord, request: ActionRequest, now: Date, chain: ChainPosition | null): Promise<Plan> {
    const minimum = declarationOf(request.action).minimumMicro;
    if (minimum !== undefined && request.amountMicro < minimum) {
      const least = formatDecimal(minimum, 6);
      throw new TreasuryError("invalid_request", `the minimum ${request.action} is ${least} USDC`, {
        details: [{ location: "body", field: "amount_usdc", message: `must be at least ${least}` }],
      });
    }
    await this.refusePending(treasury, now);
    return this.planner.plan(treasury, request, chain);
  }

  /** what the store decides: no envelope awaiting signature, no Safe transaction open */
  private async refusePending(treasury: TreasuryRecord, now: Date): Promise<void> {
    const pending = await this.ctx.stores.envelopes.pendingFor(treasury.id, now.toISOString());
    if (pending) {
      throw new TreasuryError(
        "conflicting_operation",
        `envelope ${pending.txId} (${pending.action}) is awaiting signature until ${pending.expiresAt}; relay it or let it expire before a new action`,
        { pending_tx_id: pending.txId, pending_action: pending.action, pending_expires_at: pending.expiresAt },
      );
    }
    const queued = await this.ctx.stores.safeTransactions.openFor(treasury.id, now.toISOString());
    if (queued) {
      throw new TreasuryError(
        "conflicting_operation",
        `Safe transaction ${queued.id} (${queued.action}) is ${queued.status === "executing" ? "executing" : `awaiting the Safe owners' signatures until ${queued.expiresAt}`}; a new action waits for it`,
        { pending_safe_transaction_id: queued.id, pending_action: queued.action, pending_status: queued.status },
      );
    }
  }
}
