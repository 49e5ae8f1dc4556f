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
 */
import type { Action } from "../actions";
import type { Fee } from "../domain/fees";
import type { Micro } from "../domain/money";
import { newId } from "../lib/ids";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";

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

export class ExecutionRecorder {
  constructor(private readonly ctx: ServiceContext<"apiKeys" | "executions" | "fees">) {}

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
