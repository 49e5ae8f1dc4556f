/**
 * The transactions behind an action in wallet mode, as its declaration plans
 * them (actions/*.ts, with the call builders of actions/steps.ts): real
 * ABI-encoded calls to the real Aave V3 Pool of the treasury's chain, the
 * approvals they need, the service fee transfer and Uniswap V3 swaps. The same
 * list is a Safe's batch and the sandbox's impersonated run. Pure: no I/O.
 */
import type { TreasuryChain } from "../contracts/chains";
import { declarationOf, type TreasuryAction } from "../actions";
import { stepContext, type PlannedStep } from "../actions/steps";
import type { ActionParams } from "../domain/sandbox-ledger";
import type { Micro } from "../domain/money";

export type { PlannedStep, StepKind, StepSummary } from "../actions/steps";
export { SWAP_SLIPPAGE_BPS as CONVERT_SLIPPAGE_BPS, VARIABLE_RATE } from "../actions/steps";

export interface PlanInput {
  action: TreasuryAction;
  chain: TreasuryChain;
  wallet: `0x${string}`;
  amountMicro: Micro;
  feeMicro: Micro;
  feeRecipient: `0x${string}`;
  target?: "btc" | "eth";
  /** the action's own parameters (convert's target is also accepted alone, as `target`) */
  params?: ActionParams;
}

export function planSteps(input: PlanInput): PlannedStep[] {
  const params: ActionParams = { ...(input.params ?? {}), ...(input.target ? { target: input.target } : {}) };
  const planned = declarationOf(input.action).plan(stepContext(input.chain, input.wallet), {
    amountMicro: input.amountMicro,
    feeMicro: input.feeMicro,
    feeRecipient: input.feeRecipient,
    params,
  });
  // a zero fee (tiny amounts) needs no transfer
  return planned.filter((s) => s.kind !== "fee_transfer" || input.feeMicro > 0n);
}
