/**
 * The one place an execution is recorded: the execution row (treasury
 * actions) and its fee audit entry, in the caller's transaction. Used by
 * managed actions, the relay (the envelope's own fee, as signed) and the
 * protection engine.
 *
 * Environment: an execution is `live` only when its treasury is a live one
 * (a live key is bound to it, issued through the reviewed onboarding) and its
 * chain is declared a production network (LIVE_CHAINS). Everything else,
 * simulated or executed on a local test chain with sandbox funds, is
 * `sandbox`: audited as such, and it never moves the platform-wide fee
 * ratchet. A live execution counts toward platform volume only once settled
 * on chain (`settled`).
 *
 * A treasury action is recorded from its plan (`recordAction`): the sandbox
 * ledger's new holdings (if any), the execution with the action's receipt
 * (spec 2.4) and its fee audit, all in the caller's transaction.
 */
import { declarationOf, type Action } from "@treasury/core/actions";
import type { Fee } from "@treasury/core/domain/fees";
import { usdcToNumber, type Micro } from "@treasury/core/domain/money";
import { newId } from "@treasury/core/lib/ids";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import type { Plan } from "./execution/planner";

export interface ExecutionFacts {
  treasury: TreasuryRecord;
  action: Action;
  amountMicro: Micro;
  fee: Fee;
  /** managed (simulated at once), relay (a relayed envelope), protection (the engine, through the module) */
  origin: "managed" | "relay" | "protection";
  envelopeTxId: string | null;
  trigger: string;
  /** the execution really happened on its chain (mined), not in simulation */
  settled: boolean;
  /** the receipt, given its execution id (treasury actions); omitted for protection actions */
  receipt?: (executionId: string) => Record<string, unknown>;
  /** an id of the caller's (e.g. the protection action's); a new one by default */
  executionId?: string;
  at: Date;
}

/** how a treasury action came to execute: a managed action at once, or the relay of an envelope (its tx_id) */
export interface ActionOrigin {
  origin: "managed" | "relay";
  envelopeTxId: string | null;
  trigger: string;
  settled: boolean;
}

/** the receipt of an action (spec 2.4), from its plan: the figures every action shares, then its declaration's own */
export function actionReceipt(id: string, plan: Plan, createdAt: string): Record<string, unknown> {
  const { request, fee, ledger } = plan;
  const d = declarationOf(request.action);
  return {
    sandbox: true,
    object: "action_receipt",
    action: request.action,
    amount_usdc: usdcToNumber(request.amountMicro),
    fee_usdc: usdcToNumber(fee.feeMicro),
    ltv_before: plan.ltvBefore,
    ltv_after: plan.ltvAfter,
    health_score_after: plan.healthAfter,
    created_at: createdAt,
    ...d.receipt({ id, amountMicro: request.amountMicro, fee, params: request.params, ledger, ltvBefore: plan.ltvBefore, debtAfterMicro: plan.debtAfterMicro }),
    status: d.status,
  };
}

export class ExecutionRecorder {
  constructor(private readonly ctx: ServiceContext<"apiKeys" | "executions" | "fees" | "treasuries">) {}

  /**
   * Record a planned treasury action: the sandbox ledger (if any), the
   * execution and its fee audit, in the caller's transaction. Returns the
   * receipt (2.4).
   */
  async recordAction(treasury: TreasuryRecord, plan: Plan, how: ActionOrigin, now: Date): Promise<Record<string, unknown>> {
    const { request, fee, ledger } = plan;
    if (ledger) await this.ctx.stores.treasuries.updateHoldings(treasury.id, ledger.holdings, now.toISOString());
    const { receipt } = await this.record({
      treasury,
      action: request.action,
      amountMicro: request.amountMicro,
      fee,
      ...how,
      executionId: newId(declarationOf(request.action).idPrefix),
      receipt: (id) => actionReceipt(id, plan, now.toISOString()),
      at: now,
    });
    return receipt!;
  }

  async environmentOf(t: TreasuryRecord): Promise<"sandbox" | "live"> {
    if (t.origin === "sandbox_key" || !this.ctx.config.liveChains.includes(t.chain)) return "sandbox";
    return (await this.ctx.stores.apiKeys.hasLiveKey(t.id)) ? "live" : "sandbox";
  }

  /** record inside the caller's transaction; returns the execution id and receipt */
  async record(f: ExecutionFacts): Promise<{ executionId: string; receipt: Record<string, unknown> | undefined }> {
    const { executionId, receipt } = await this.recordReceipt(f);
    await this.audit(f, executionId);
    return { executionId, receipt };
  }

  /**
   * The execution row alone, for an action that has not executed yet (a
   * managed action waiting for its Safe's owners): its fee is audited only
   * when it executes (audit), never for one that does not.
   */
  async recordReceipt(f: ExecutionFacts): Promise<{ executionId: string; receipt: Record<string, unknown> | undefined }> {
    const executionId = f.executionId ?? newId("exe");
    const receipt = f.receipt?.(executionId);
    if (receipt && f.origin !== "protection") {
      await this.ctx.stores.executions.insert({
        id: executionId,
        treasuryId: f.treasury.id,
        action: f.action,
        amountMicro: f.amountMicro,
        feeMicro: f.fee.feeMicro,
        origin: f.origin,
        envelopeTxId: f.envelopeTxId,
        receipt,
        createdAt: f.at.toISOString(),
      });
    }
    return { executionId, receipt };
  }

  /** the fee audit entry of an execution (fee 0 for downward legs), in the caller's transaction */
  async audit(f: ExecutionFacts, executionId: string): Promise<void> {
    const environment = await this.environmentOf(f.treasury);
    await this.ctx.stores.fees.record({
      id: newId("fee"),
      treasuryId: f.treasury.id,
      action: f.action,
      amountMicro: f.amountMicro,
      feeMicro: f.fee.feeMicro,
      feeBps: Number(f.fee.feeBps),
      feeBasis: f.fee.basis,
      trigger: f.trigger,
      executionRef: executionId,
      createdAt: f.at.toISOString(),
      environment,
      countsTowardVolume: environment === "live" && f.settled,
    });
  }
}
