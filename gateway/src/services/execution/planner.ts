/**
 * The plan of an action (spec 2.2, 2.3): its fee, the safety rail and the
 * balance checks, without writing anything. A chain-backed treasury is
 * checked against its position as Aave reports it and its wallet's USDC
 * (an action that swaps bounded under the pool's quote now); a sandbox
 * treasury against its simulated ledger (a swap filled at the sandbox's
 * price), whose next holdings the plan carries. An unproven registration's
 * own ledger is given the USDC the action takes first, as the sandbox funds
 * a proven wallet on its fork, so one request has one effect on both.
 *
 * Every execution mode plans the same way (services/execution/modes.ts), and
 * so do the relay of a simulated envelope (with the fee it was signed with)
 * and the Safe executor (the rail again at execution).
 */
import { declarationOf, type TreasuryAction } from "@treasury/core/actions";
import { PlanRefusal, type ActionDeclaration, type PriceOf, type WalletPosition } from "@treasury/core/actions/declaration";
import { ASSETS, sandboxUnitsFor, sandboxValueMicro, type AssetSymbol } from "@treasury/core/domain/assets";
import type { Fee } from "@treasury/core/domain/fees";
import { formatDecimal, usdcToNumber, type Micro } from "@treasury/core/domain/money";
import { positionOf, type Holdings } from "@treasury/core/domain/portfolio";
import { healthScore, ltvPct, PositionError, simulate, type Simulation } from "@treasury/core/domain/position";
import { PRESETS, type Preset } from "@treasury/core/domain/presets";
import { LedgerError, type ActionParams, type LedgerResult } from "@treasury/core/domain/sandbox-ledger";
import { planSteps, type PlannedStep } from "@treasury/core/chain/envelope-plan";
import { TreasuryError } from "@treasury/core/lib/errors";
import { chainAsPosition, type ChainGateway, type ChainPosition } from "../../chain/chain-gateway";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";
import { safetyRailError } from "../preview-service";
import { ownLedger } from "./backing";

export interface ActionRequest {
  action: TreasuryAction;
  amountMicro: Micro;
  params: ActionParams;
}

export interface Plan {
  request: ActionRequest;
  fee: Fee;
  /** the fee tier the fee was priced at (absent: a fee as signed, an envelope's) */
  tierIndex?: number;
  /** the prices an amount in a token was valued at (the chain's oracle when planned), for the rail's refusal in its unit */
  price?: PriceOf;
  /** the sandbox ledger after the action; null for a chain-backed treasury (the chain is the ledger) */
  ledger: LedgerResult | null;
  ltvBefore: number;
  ltvAfter: number;
  healthAfter: number;
  debtAfterMicro: Micro;
}

/** the calls of a planned action from the treasury's wallet (a Safe's, an envelope's, the sandbox's run) */
export const plannedSteps = (t: TreasuryRecord, plan: Plan, feeRecipient: `0x${string}`): PlannedStep[] =>
  planSteps({
    action: plan.request.action,
    chain: t.chain,
    wallet: t.walletAddress,
    amountMicro: plan.request.amountMicro,
    feeMicro: plan.fee.feeMicro,
    feeRecipient,
    params: plan.request.params,
  });

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

/**
 * The holdings an action meets on a ledger: an unproven registration's own ledger models the sandbox's fork,
 * where a wallet is given the USDC the action takes (backing.fundForAction: topped up to it, never lowered)
 */
function fundedLedger(t: TreasuryRecord, d: ActionDeclaration<TreasuryAction>, amountMicro: Micro): Holdings {
  const h = t.holdings;
  if (!ownLedger(t)) return h;
  const needed = d.sandboxUsdcMicro(amountMicro);
  return h.usdcMicro >= needed ? h : { ...h, usdcMicro: needed };
}

/** a ledger's holdings as the wallet's position on a chain: what is supplied to Aave, and the wallet's idle USDC */
const asWalletPosition = (h: Holdings): WalletPosition => ({
  debtMicro: h.debtMicro,
  holdings: { aUsdc: h.suppliedUsdcMicro ?? 0n, aWeth: h.ethUnits, aBtc: h.btcUnits, walletUsdc: h.usdcMicro },
});

/** a simulation whose action cannot apply to the position (more collateral out than there is) is a typed refusal (its own code) */
function simulated(run: () => Simulation): Simulation {
  try {
    return run();
  } catch (err) {
    if (err instanceof PositionError) throw new TreasuryError(err.code, err.message);
    throw err;
  }
}

export class Planner {
  constructor(
    private readonly ctx: ServiceContext<"fees">,
    private readonly chain: ChainGateway,
  ) {}

  /** `signedFee`: a relayed envelope applies the fee it was signed with, not today's tier */
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
      const checked = this.checkOnChain(treasury, d, request, chain, tier, price);
      // an action that swaps is bounded under the pool's quote now (QuoterV2)
      return { ...checked, ...(price ? { price } : {}), request: await this.quoted(treasury, d, request, checked.fee.feeMicro) };
    }
    const before = positionOf(treasury.holdings);
    const funded = fundedLedger(treasury, d, request.amountMicro);
    // the refusals that do not depend on balances are the chain's own (what is not supplied cannot be withdrawn, sold or exited)
    const needs = d.walletNeeds(request.amountMicro, asWalletPosition(funded), request.params);
    if (needs.refusal) throw new TreasuryError(needs.refusal.code, needs.refusal.message);
    const sim = simulated(() => simulate(before, d, request.amountMicro, preset, tier));
    if (sim.breach) throw railError(d, sim, preset, request, price);
    // on a ledger an action that swaps fills at the sandbox's price
    const q = d.quote?.(request.params, request.amountMicro, sim.fee.feeMicro);
    if (q) request.params = { ...request.params, quoted: sandboxSwap(q.from, q.to, q.units).toString() };
    const fee = signedFee ?? sim.fee;
    let ledger: LedgerResult;
    try {
      ledger = d.ledger(funded, request.amountMicro, fee.feeMicro, request.params);
    } catch (err) {
      if (err instanceof LedgerError) throw new TreasuryError(err.code, err.message);
      throw err;
    }
    // an action asked without an amount (exit) states what it did
    if (d.ledgerAmountMicro) request.amountMicro = d.ledgerAmountMicro(ledger);
    const after = positionOf(ledger.holdings);
    return {
      request,
      fee,
      tierIndex: tier,
      ledger,
      ltvBefore: ltvPct(before),
      ltvAfter: ltvPct(after),
      healthAfter: healthScore(after),
      debtAfterMicro: ledger.holdings.debtMicro,
    };
  }

  /**
   * A chain plan checked again on the position as it is now (a paid request's settlement moved the payer's
   * USDC after the plan was made): the wallet's balances, the rail and Aave's health rule, on the plan's own
   * request (its quote and its prices kept). Pure: no call to the chain.
   */
  confirm(treasury: TreasuryRecord, plan: Plan, chain: ChainPosition): Plan {
    return { ...plan, ...this.checkOnChain(treasury, declarationOf(plan.request.action), plan.request, chain, plan.tierIndex ?? 0, plan.price ?? null) };
  }

  /**
   * The fee of a chain plan at the store's fee tier now (the ratchet moved since the plan was made), its figures
   * simulated again on the position the plan was made on. Pure: no call to the chain.
   */
  repriced(treasury: TreasuryRecord, plan: Plan, chain: ChainPosition, tierIndex: number): Plan {
    if (plan.tierIndex === undefined || plan.tierIndex === tierIndex) return plan;
    return { ...plan, ...this.checkOnChain(treasury, declarationOf(plan.request.action), plan.request, chain, tierIndex, plan.price ?? null) };
  }

  /** the checks of an action on a chain position (the wallet's needs, the rail, Aave's health rule, the wallet's USDC) and its figures */
  private checkOnChain(
    treasury: TreasuryRecord,
    d: ActionDeclaration<TreasuryAction>,
    request: ActionRequest,
    chain: ChainPosition,
    tier: number,
    price: PriceOf | null,
  ): Omit<Plan, "request"> {
    const preset = PRESETS[treasury.preset];
    const position = chainAsPosition(chain)!;
    const needs = d.walletNeeds(request.amountMicro, chain, request.params);
    if (needs.refusal) throw new TreasuryError(needs.refusal.code, needs.refusal.message);
    const sim = simulated(() => simulate(position, d, request.amountMicro, preset, tier));
    if (sim.breach) throw railError(d, sim, preset, request, price);
    // Aave's own rule after a downward leg: a health factor under 1 reverts (the rail's ceilings are under every liquidation threshold, so it holds)
    if (d.direction === "down" && sim.after.debtMicro > 0n && sim.healthAfter < 1) {
      throw new TreasuryError("would_be_liquidatable", `Aave refuses this ${request.action}: the health factor would fall to ${sim.healthAfter}, under 1`);
    }
    if (chain.holdings.walletUsdc < needs.usdcMicro) {
      throw new TreasuryError(
        "insufficient_balance",
        `the wallet holds ${formatDecimal(chain.holdings.walletUsdc, 6)} USDC on ${treasury.chain}; this ${request.action} needs ${formatDecimal(needs.usdcMicro, 6)}`,
      );
    }
    return {
      fee: sim.fee,
      tierIndex: tier,
      ledger: null,
      ltvBefore: sim.ltvBefore,
      ltvAfter: sim.ltvAfter,
      healthAfter: sim.healthAfter,
      debtAfterMicro: sim.after.debtMicro,
    };
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
}
