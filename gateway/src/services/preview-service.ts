/**
 * Action previews (spec 2.3, 4.3 preview, 4.6 estimate): fee, LTV before and
 * after, health after, and the safety rail (spec 2.2) when the action would
 * end above the ceiling.
 */
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { declarationOf, ruleOf, type Action, type TreasuryAction } from "@treasury/core/actions";
import { parseUsdc, usdcToNumber, type Micro } from "@treasury/core/domain/money";
import { DEMO_HOLDINGS, positionOf } from "@treasury/core/domain/portfolio";
import { PositionError, positionAtLtv, simulate, type Position, type Simulation } from "@treasury/core/domain/position";
import { PRESETS, type Preset } from "@treasury/core/domain/presets";
import type { TreasuryRecord } from "../store/treasury-store";
import { chainAsPosition, type ChainPosition } from "../chain/chain-gateway";
import { TreasuryError } from "@treasury/core/lib/errors";
import { CONVERT_NEEDS_TARGET, type EstimateBody } from "../schemas/actions";
import type { ServiceContext } from "./context";
import type { Subject } from "./subject";

export interface PreviewInput {
  action: Action;
  amountMicro: Micro;
  currentLtv?: number | undefined;
}

/** Resolve `amount` and its alias `amount_usdc`: either, or both when equal. */
export function resolveAmount(amount: number | undefined, amountUsdc: number | undefined): Micro {
  if (amount !== undefined && amountUsdc !== undefined && parseUsdc(amount) !== parseUsdc(amountUsdc)) {
    throw new TreasuryError("invalid_request", "amount and amount_usdc are aliases; when both are sent they must be equal", {
      details: [{ location: "body", field: "amount_usdc", message: "differs from amount" }],
    });
  }
  const value = amountUsdc ?? amount;
  if (value === undefined) throw new TreasuryError("invalid_request", "amount_usdc (or its alias amount) is required");
  return parseUsdc(value);
}

/** The 403 safety-rail error of spec 2.2. */
export function safetyRailError(sim: Simulation, preset: Preset): TreasuryError {
  const safe = sim.breach!.safeAmountMicro;
  return new TreasuryError(
    "ltv_limit_exceeded",
    `${sim.action} of ${usdcToNumber(sim.amountMicro)} USDC would take LTV from ${sim.ltvBefore}% to ${sim.ltvAfter}%, above the ${preset.ceiling}% ceiling; ` +
      `the largest amount that stays within it is ${usdcToNumber(safe)} USDC`,
    {
      allowed: false,
      approved: false,
      safe_amount: usdcToNumber(safe),
      current_ltv: sim.ltvBefore,
      resulting_ltv: sim.ltvAfter,
      ceiling: preset.ceiling,
      fee_usd: usdcToNumber(sim.fee.feeMicro),
      fee_basis: sim.fee.basis,
    },
  );
}

/** what an estimate reads of the treasury it is asked on (ActionService's reads) */
export interface EstimateTreasuries {
  treasury(id: string): Promise<TreasuryRecord>;
  /** the position as Aave reports it, for a chain-backed treasury; null for a sandbox one */
  position(t: TreasuryRecord): Promise<ChainPosition | null>;
}

export class PreviewService {
  constructor(
    private readonly ctx: ServiceContext<"fees">,
    /** fresh native-USDC variable borrow APY of a chain, or null */
    private readonly borrowApy: (chain: TreasuryChain) => number | null,
    private readonly treasuries: EstimateTreasuries,
  ) {}

  /** the fee ratchet as it stands: the tier the schedule's fees are at (fees.json) */
  ratchet() {
    return this.ctx.stores.fees.ratchet();
  }

  /** POST /api/v1/estimate (spec 4.6) on the authenticated treasury: the body checked, the treasury and its chain position read, then `estimate` */
  async estimateFor(treasuryId: string, body: EstimateBody) {
    CONVERT_NEEDS_TARGET.check(body);
    const treasury = await this.treasuries.treasury(treasuryId);
    const chain = await this.treasuries.position(treasury);
    return await this.estimate(treasury, body.action, resolveAmount(body.amount, body.amount_usdc), body.target, chainAsPosition(chain));
  }

  /** POST /api/v1/estimate (spec 4.6): the preview of 2.3 on the treasury, plus the reference page's fields. */
  async estimate(
    treasury: TreasuryRecord,
    action: TreasuryAction,
    amountMicro: Micro,
    target: "btc" | "eth" | undefined,
    chainPosition: Position | null = null,
  ) {
    const preset = PRESETS[treasury.preset];
    const sim = await this.run(chainPosition ?? positionOf(treasury.holdings), { action, amountMicro }, preset);
    // what the action's declaration adds: Aave's borrow rate for an action on the debt, its own fields
    const own = declarationOf(action).estimate;
    return {
      ...this.previewBody(sim, chainPosition ? "chain" : "sandbox_simulation"),
      treasury_id: treasury.id,
      service_fee: usdcToNumber(sim.fee.feeMicro),
      aave_rate: own?.borrowRate ? this.borrowApy(treasury.chain) : null,
      aave_rate_kind: "variable_borrow_apy_pct (null unless read from the chain's Pool within the cache window)",
      dex_spread: null,
      ...own?.fields?.({ target }),
      net_amount: usdcToNumber(sim.amountMicro - sim.fee.feeMicro),
      estimated_at: this.ctx.clock.now().toISOString(),
    };
  }

  /** Simulate on a position at the fee ratchet's tier as it stands; throws the typed 400/403 errors. */
  async run(position: Position, input: PreviewInput, preset: Preset): Promise<Simulation> {
    return this.simulateAt(position, input, preset, (await this.ctx.stores.fees.ratchet()).tierIndex);
  }

  /** Simulate on a position at a fee tier; throws the typed 400/403 errors. */
  private simulateAt(position: Position, input: PreviewInput, preset: Preset, tier: number): Simulation {
    let sim: Simulation;
    try {
      sim = simulate(position, ruleOf(input.action), input.amountMicro, preset, tier);
    } catch (err) {
      if (err instanceof PositionError) throw new TreasuryError(err.code, err.message);
      throw err;
    }
    if (sim.breach) throw safetyRailError(sim, preset);
    return sim;
  }

  /** Public preview on the demo portfolio or a registered sandbox treasury. */
  async previewFor(subject: Subject, input: PreviewInput) {
    let position = positionOf(subject.holdings);
    if (input.currentLtv !== undefined) {
      // current_ltv restates the debt against the subject's collateral; with no
      // collateral, the demo portfolio's collateral is the reference
      const collateral = position.collateralMicro > 0n ? position.collateralMicro : positionOf(DEMO_HOLDINGS).collateralMicro;
      position = positionAtLtv(collateral, input.currentLtv, position.liquidationThresholdBps);
    }
    // the ratchet read here, the simulation synchronous: one asynchronous step per preview
    const { tierIndex } = await this.ctx.stores.fees.ratchet();
    return this.previewBody(this.simulateAt(position, input, subject.preset, tierIndex), subject.environment);
  }

  previewBody(sim: Simulation, environment: string) {
    const automated = sim.action === "protection" || sim.action === "auto_repay" || sim.action === "auto_deleverage";
    return {
      object: "action_preview" as const,
      environment,
      approved: true,
      action: sim.action,
      amount_usdc: usdcToNumber(sim.amountMicro),
      service_fee_usdc: usdcToNumber(sim.fee.feeMicro),
      fee_basis: sim.fee.basis,
      ltv_before: sim.ltvBefore,
      ltv_after: sim.ltvAfter,
      health_score_after: sim.healthAfter,
      requires_signature: !automated,
      unsigned_transaction: null,
    };
  }
}
