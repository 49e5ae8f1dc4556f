/**
 * How a treasury action is carried out: one strategy per execution mode, each
 * in its own module beside the others, chosen by the table in modes.ts.
 *
 *   ledger        a sandbox key's treasury: its ledger in the store, the whole request one transaction
 *   sandbox_fork  a proven sandbox wallet on the local fork: each step sent as the wallet (impersonated)
 *   safe          an operator's Safe: one Safe transaction for its owners to sign, executed once signed
 *   computed      any other managed treasury: computed on its position or its own ledger, nothing sent
 *   envelope      a wallet-mode treasury: an unsigned envelope, nothing changes until it is relayed
 *
 * ActionService (action-service.ts) runs every mode the same way: the plan made once, by `reserve`, before
 * any store transaction (every chain read: position, quote, prices); `prepare` outside the database
 * transaction (what the mode does on a chain first); `commit` in it, on the treasury as it is then, after
 * the store's own re-checks (the slot held, no envelope or Safe transaction pending, the fee tier; a ledger
 * planned again, it is the store's) unless the mode says its chain already holds the result
 * (`recheck: false`); `after` once committed. No chain call happens inside the transaction
 * (@treasury/core/lib/store-transaction refuses it). A strategy returns an outcome with a kind, never an
 * HTTP status: the route maps the kind.
 */
import type { ChainGateway, ChainPosition } from "../../chain/chain-gateway";
import type { SandboxChain } from "../../chain/sandbox-chain";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";
import type { EnvelopeLifecycle } from "../envelopes/lifecycle";
import type { SandboxSteps } from "../envelopes/sandbox-steps";
import type { ExecutionRecorder } from "../execution-recorder";
import type { TreasuryBacking } from "./backing";
import type { ActionRequest, Plan } from "./planner";

export type ExecutionModeName = "ledger" | "sandbox_fork" | "safe" | "computed" | "envelope";

/** what an action came to; the route answers 200 for `executed` and `queued_on_safe`, 202 for `envelope_created` */
export type ActionOutcome =
  /** the action ran: on a ledger, on the sandbox's fork, or computed on the position (the receipt, spec 2.4) */
  | { kind: "executed"; result: Record<string, unknown> }
  /** a Safe transaction awaits the Safe's owners (the receipt, `processing`) */
  | { kind: "queued_on_safe"; result: Record<string, unknown> }
  /** an unsigned envelope awaits the wallet's signatures (spec 2.5) */
  | { kind: "envelope_created"; result: Record<string, unknown> };

/** one action as a mode receives it, after its checks */
export interface ModeRun {
  treasuryId: string;
  request: ActionRequest;
  trigger: string;
  /** the treasury as it was read for the checks */
  before: TreasuryRecord;
  /** its position on its chain; null: a ledger */
  chain: ChainPosition | null;
  /** the plan reserve made (checked again on the position now after a paid request's settlement) */
  planned: Plan;
  /** the wallet's next nonce, for a mode that asked for it (`needsNonce`) */
  nonce: { nonce: number | null; source: string } | null;
}

/** what a mode commits once it has done its work outside the database transaction */
export interface PreparedExecution {
  /** re-check in the transaction what the store decides (false: the chain already holds the result) */
  recheck: boolean;
  /** in the database transaction: the record of the action */
  commit(treasury: TreasuryRecord, plan: Plan, now: Date): Promise<ActionOutcome>;
  /** once committed */
  after?(outcome: ActionOutcome): Promise<void>;
}

export interface ExecutionStrategy {
  readonly mode: ExecutionModeName;
  /** the wallet's next nonce is read alongside the position (an envelope carries it as a hint) */
  readonly needsNonce?: boolean;
  /** does this mode carry out the treasury's action? Asked in the table's order, after the checks */
  applies(t: TreasuryRecord, chain: ChainPosition | null): boolean | Promise<boolean>;
  /** outside the database transaction: what the mode does first (on a chain), and what then commits it */
  prepare(run: ModeRun): Promise<PreparedExecution>;
}

/** what the modes are built with */
export interface ModeDeps {
  ctx: ServiceContext<"events" | "safeTransactions">;
  backing: TreasuryBacking;
  recorder: ExecutionRecorder;
  envelopes: EnvelopeLifecycle;
  sandboxSteps: SandboxSteps;
  chain: ChainGateway;
  sandbox: SandboxChain;
}

/** a managed action's record: not relayed, not settled on chain (a live fee counts toward volume only once settled) */
export const managedOrigin = (trigger: string) => ({ origin: "managed" as const, envelopeTxId: null, trigger, settled: false });
