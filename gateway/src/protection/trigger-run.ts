/**
 * What the protection engine's stages share: the engine's parts (its stores, its chain, its automation key,
 * the execution recorder), one claimed trigger's run (the delegation, the claim, what landed and its gas) and
 * the result of a pass on one treasury. The stages: the plan (repayment-plan.ts), the transactions written on
 * the claim (claim-transactions.ts), the end of the claim (trigger-outcome.ts), composed by engine.ts.
 */
import type { Hex, TransactionReceipt } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { ChainGateway } from "../chain/chain-gateway";
import type { ServiceContext } from "../services/context";
import type { ExecutionRecorder } from "../services/execution-recorder";
import type { DelegationRecord } from "../store/delegation-store";
import type { ProtectionClaim } from "../store/protection-claim-store";
import type { TreasuryRecord } from "../store/treasury-store";

/** what one pass did on one treasury */
export interface TickResult {
  treasuryId: string;
  outcome: "not_active" | "healthy" | "already_acted" | "in_progress" | "executed" | "skipped" | "failed";
  detail?: string;
}

/** the stores the engine is given */
export type EngineContext = ServiceContext<
  | "apiKeys"
  | "automationNonces"
  | "delegations"
  | "engineShards"
  | "events"
  | "executions"
  | "fees"
  | "instances"
  | "positionSamples"
  | "protectionClaims"
  | "treasuries"
>;

/** the engine's parts, handed to each stage */
export interface EngineParts {
  ctx: EngineContext;
  chain: ChainGateway;
  recorder: ExecutionRecorder;
  /** the automation key: it signs and pays for every transaction */
  automation: PrivateKeyAccount;
  /** the engine's name: its heartbeat and the claims it holds */
  engineId: string;
}

/** one engine's work on one claimed trigger */
export interface Run {
  d: DelegationRecord;
  t: TreasuryRecord;
  threshold: number;
  claim: ProtectionClaim;
  /** ETH spent on gas by the claim's landed transactions */
  gasWei: bigint;
  receipts: Map<Hex, TransactionReceipt>;
  /** the latest block when this engine signed each of its transactions: a replacement counts blocks from there */
  sentAt: Map<Hex, bigint>;
}
