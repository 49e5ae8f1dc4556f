/**
 * The plan of one protection action: the repayment that parks the position and its module calls
 * (repayment-source.ts: idle USDC, supplied USDC, or a sale of collateral), priced in gas before anything is
 * sent. The automation key pays the gas (spec 2.12), so the estimated cost (gas x max fee x the oracle's ETH
 * price) must stay within the per-action cap (0.25 USD) and the treasury's monthly budget (5 USD), an
 * off-chain budget. Anything that stops the plan is recorded as skipped (trigger-outcome.ts).
 */
import { AAVE_ORACLE_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { GAS_CAPS } from "@treasury/core/domain/policy";
import { ltvPct } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";
import { usdOfWei, type ChainPosition } from "../chain/chain-gateway";
import type { DelegationRecord } from "../store/delegation-store";
import type { ProtectionClaim } from "../store/protection-claim-store";
import { moduleCall, type Call } from "./module-calls";
import { repaymentSource } from "./repayment-source";
import { recordSkip } from "./trigger-outcome";
import type { EngineParts, TickResult } from "./trigger-run";

/** the engine's gas settings */
export interface GasSettings {
  gasCaps?: { perActionUsd: number; perMonthUsd: number };
  /** priority fee per gas (default 0.001 gwei, an L2 tip) */
  priorityFeeWei?: bigint;
}

export interface Plan {
  calls: Call[];
  repay: bigint;
  fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
  ethPrice: bigint;
  /** what the plan says of itself, kept on the claim (the record's note) */
  about: NonNullable<ProtectionClaim["plan"]>;
}

export const isPlan = (p: Plan | TickResult): p is Plan => "calls" in p;

function caps(settings: GasSettings) {
  return settings.gasCaps ?? { perActionUsd: GAS_CAPS.per_action_usd, perMonthUsd: GAS_CAPS.per_month_usd };
}

/** the repayment that parks the position, its calls and gas, or why nothing can be done (recorded as skipped) */
export async function planRepayment(
  { ctx, chain: gateway, automation }: EngineParts,
  settings: GasSettings,
  d: DelegationRecord,
  chain: TreasuryChain,
  position: ChainPosition,
  health: number,
): Promise<Plan | TickResult> {
  const t = (await ctx.stores.treasuries.get(d.treasuryId))!;
  const m = AAVE_MARKETS[chain];
  const park = BigInt(PRESETS[t.preset].parkTarget * 100);
  const client = gateway.client(chain);
  const [usdcPrice, ethPrice] = await Promise.all(
    [m.usdc, m.weth].map((asset) => client.readContract({ address: m.oracle, abi: AAVE_ORACLE_ABI, functionName: "getAssetPrice", args: [asset] })),
  );
  const source = await repaymentSource(gateway, d, chain, position, usdcPrice!, park);
  if (typeof source === "string") return recordSkip(ctx, d, health, ltvPct(position), source);
  const { calls, repay, about } = source;

  // the gas budget: the automation key pays, so the cost is checked before anything is sent
  // L2 fees: twice the current base fee plus a small tip (nodes often suggest a mainnet-sized 1 gwei tip)
  const block = await client.getBlock();
  const tip = settings.priorityFeeWei ?? 1_000_000n;
  const fees = { maxPriorityFeePerGas: tip, maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip };
  // the first call is estimated as it stands; a repayment after its approval is estimated generously
  let gas = 0n;
  for (const c of calls) {
    const generous = c.kind === "deleverage" ? c.gas : 400_000n;
    gas += c === calls[0] ? await client.estimateContractGas({ account: automation, address: d.module, ...moduleCall(c) }).catch(() => generous) : generous;
  }
  const costUsd = usdOfWei(gas * fees.maxFeePerGas, ethPrice!);
  const cap = caps(settings);
  if (costUsd > cap.perActionUsd)
    return recordSkip(ctx, d, health, ltvPct(position), `gas ${costUsd.toFixed(4)} USD is above the ${cap.perActionUsd} USD per-action cap`);
  const month = await ctx.stores.delegations.monthGasUsd(d.safe, ctx.clock.now());
  if (month + costUsd > cap.perMonthUsd)
    return recordSkip(ctx, d, health, ltvPct(position), `gas budget: ${month.toFixed(4)} USD spent this month, cap ${cap.perMonthUsd}`);
  return { calls, repay, fees, ethPrice: ethPrice!, about };
}
