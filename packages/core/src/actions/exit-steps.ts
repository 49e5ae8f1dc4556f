/**
 * The calls of a planned exit, in order: the supplied USDC's repayment, each round's withdrawal, swap and
 * bounded repayment, the last repayment (Aave's type(uint256).max), the withdrawals of everything left, and the
 * sales asked for. The first Pool call is the envelope's main step.
 */
import { swapRouter02 } from "../contracts/uniswap";
import type { ExitPlan } from "./exit-plan";
import type { Volatile } from "./exit-sizing";
import {
  ALL,
  approve,
  POOL_NAME,
  repay as repayCall,
  repayWithATokens,
  ROUTER_NAME,
  swapExactIn,
  tokenOf,
  withdraw as withdrawCall,
  type PlannedStep,
  type StepContext,
} from "./steps";

/** the calls of a planned exit, in order */
export function exitSteps(c: StepContext, plan: ExitPlan): PlannedStep[] {
  const usdc = tokenOf(c, "USDC");
  const router = swapRouter02(c.market.chainId);
  const steps: PlannedStep[] = [];
  let main = true;
  const pool = (step: (isMain: boolean) => PlannedStep) => {
    steps.push(step(main));
    main = false;
  };
  if (plan.repayWithATokens !== "0") pool((m) => repayWithATokens(c, plan.repayWithATokens === "max" ? ALL : BigInt(plan.repayWithATokens), m));
  const sold = (symbol: Volatile, units: bigint, minOut: bigint, note: string) => {
    const token = tokenOf(c, symbol);
    steps.push(approve(c, token, router, ROUTER_NAME, units), swapExactIn(c, token, usdc, units, minOut, note));
  };
  plan.rounds.forEach((r, i) => {
    const last = i === plan.rounds.length - 1;
    const units = BigInt(r.units);
    const minOut = BigInt(r.minOut);
    pool((m) => withdrawCall(c, tokenOf(c, r.symbol), r.all ? ALL : units, m));
    sold(r.symbol, units, minOut, "1% below the pool's quote");
    const repaid = BigInt(r.repay);
    if (!last && repaid > 0n) {
      steps.push(approve(c, usdc, c.market.pool, POOL_NAME, repaid));
      pool((m) => repayCall(c, repaid, m));
    }
  });
  if (BigInt(plan.approval) > 0n) {
    // the last repayment: all of the debt, whatever interest accrued (Aave's type(uint256).max, for the borrower itself)
    steps.push(approve(c, usdc, c.market.pool, POOL_NAME, BigInt(plan.approval)));
    pool((m) => repayCall(c, ALL, m));
  }
  for (const a of plan.withdrawAll) pool((m) => withdrawCall(c, tokenOf(c, a), ALL, m));
  for (const x of plan.sales) sold(x.symbol, BigInt(x.units), BigInt(x.minOut), "1% below the pool's quote");
  return steps;
}
