/**
 * What an action is, declared once (one file per action beside its tests):
 * its name and direction, its fee rule, its REST route, x402 price and MCP
 * tool, its request schema, what it does to a position (the safety rail) and
 * to a sandbox ledger, the wallet calls that perform it (the same calls are a
 * Safe's batch and the sandbox's impersonated run), its receipt, the signer
 * agent's rule over the decoded calls, and its command line. Everything else
 * (the lists, the schemas' enums, routes, tools, prices, fees.json, the
 * policies) is derived from the declarations (actions/index.ts). Pure: no I/O.
 */
import type { ZodType } from "zod";
import type { AssetSymbol } from "../domain/assets";
import type { Fee, FeeKind } from "../domain/fees";
import type { MarketSnapshot } from "../domain/market-snapshot";
import type { IdPrefix } from "../lib/ids";
import type { Micro } from "../domain/money";
import type { Holdings } from "../domain/portfolio";
import type { Position, PositionRule } from "../domain/position";
import type { ActionParams, LedgerResult } from "../domain/sandbox-ledger";
import type { DecodedCall, SignerIntent, SignerRuleContext } from "./signer-rule";
import type { PlannedStep, StepContext } from "./steps";

export type Direction = "up" | "down";

/** the fields a request body may carry (each action's schema picks its own) */
export interface ActionBody {
  amount?: number;
  amount_usdc?: number;
  asset?: "USDC" | "ETH" | "BTC";
  allocation?: { btc: number; eth: number };
  target?: "btc" | "eth";
  purpose?: string;
  sell?: boolean;
}

/** what the envelope needs to know to plan the calls */
export interface PlanInput {
  amountMicro: Micro;
  feeMicro: Micro;
  feeRecipient: `0x${string}`;
  params: ActionParams;
}

/** what a receipt is made of, beyond the common fields (ids, amounts, LTVs) the service writes */
export interface ReceiptInput {
  id: string;
  amountMicro: Micro;
  fee: Fee;
  params: ActionParams;
  ledger: LedgerResult | null;
  ltvBefore: number;
  debtAfterMicro: Micro;
}

/** what the wallet (or Safe) must hold on chain for the action, read from its position */
export interface WalletNeeds {
  /** idle USDC the wallet spends (its own balance, not supplied) */
  usdcMicro: Micro;
  /** a refusal that does not depend on balances (repay with no debt): code and message */
  refusal?: { code: "no_debt" | "insufficient_collateral"; message: string };
}

/** the wallet's position on chain as an action's needs read it */
export interface WalletPosition {
  debtMicro: Micro;
  /** supplied to Aave (aToken balances, token units) and the wallet's own USDC */
  holdings: { aUsdc: bigint; aWeth: bigint; aBtc: bigint; walletUsdc: bigint };
}

/** a price in micro-USDC per whole unit of the asset: the chain's Aave oracle, or the sandbox's fixed price */
export type PriceOf = (symbol: AssetSymbol) => bigint;

export type { MarketSnapshot };

/** an action that cannot be planned on the chain's figures as asked (an exit the collateral cannot cover): its reason, for the caller */
export class PlanRefusal extends Error {}

export interface ActionDeclaration<Name extends string = string> extends PositionRule {
  name: Name;
  /** up: money goes in (fee-bearing); down: it comes out (always free: spec fee rule 4) */
  direction: Direction;
  fee: FeeKind;
  /** receipt and execution id prefix, and the receipt's id field */
  idPrefix: IdPrefix;
  receiptId: string;
  /** a managed action's receipt status (spec 2.4), and what a proposed Safe transaction shows until it executes */
  status: "processing" | "approved" | "completed";
  proposedStatus: "processing" | "approved";
  route: {
    path: string;
    operationId: string;
    summary: string;
    toolDescription: string;
    example: ActionBody;
    /** the x402 price of preparing it (atomic USDC, distinct per route) */
    price: { atomic: bigint; description: string };
    /** responses beyond the common ones (borrow: the safety rail's 403) */
    extraResponses?: Record<number, { description: string; schema?: ZodType }>;
  };
  body: ZodType<ActionBody>;
  /** the action's own parameters, from its body */
  params(body: ActionBody): ActionParams;
  /** the least amount accepted, micro-USDC (deposit: 100 USDC) */
  minimumMicro?: Micro;
  /**
   * An action whose amount is in a token (withdraw or sell of ETH or BTC): its value in micro-USDC at
   * `price` (the chain's oracle, or the sandbox's price); without it the amount is `amount_usdc`.
   */
  valueMicro?(params: ActionParams, price: PriceOf): Micro;
  /**
   * An action that swaps: what it sells for what, given its fee (the service asks the pool's quote for it, kept
   * in params.quoted, and the plan bounds the swap 1% under it)
   */
  quote?(params: ActionParams, amountMicro: Micro, feeMicro: Micro): { from: AssetSymbol; to: AssetSymbol; units: bigint } | null;
  /**
   * An action planned on the chain's own figures (exit): its params from the wallet's market snapshot and the
   * pool's quotes, or its refusal (an Error with the reason); a ledger plans without it
   */
  planOnChain?(params: ActionParams, snapshot: MarketSnapshot, quote: (from: "ETH" | "BTC", units: bigint) => Promise<bigint>): Promise<ActionParams>;
  /** the rail's refusal states the safe amount in the request's own unit (units of the asset) */
  safeUnits?(params: ActionParams, safeMicro: Micro, price: PriceOf): { amount: string; asset: AssetSymbol };
  /** the sandbox ledger after it */
  ledger(h: Holdings, amountMicro: Micro, feeMicro: Micro, params: ActionParams): LedgerResult;
  /** an action asked without an amount (exit): the amount its ledger's record states, from what the ledger did */
  ledgerAmountMicro?(result: LedgerResult): Micro;
  /** on a chain: what the wallet must hold, and how much USDC the sandbox gives a new wallet to try it */
  walletNeeds(amountMicro: Micro, position: WalletPosition, params: ActionParams): WalletNeeds;
  sandboxUsdcMicro(amountMicro: Micro): Micro;
  /** the calls that perform it, in order (the fee step dropped when the fee is 0) */
  plan(c: StepContext, input: PlanInput): PlannedStep[];
  /** the action's own receipt fields */
  receipt(r: ReceiptInput): Record<string, unknown>;
  /** one line saying what it does, for a person about to sign it (a Safe transaction in the console); default: "<name> <amount> USDC" */
  title?(params: ActionParams, amountMicro: Micro): string;
  /** the fields a Safe transaction's completed receipt adds (repay: the debt left) */
  onExecuted?(after: { debtMicro: Micro }): Record<string, unknown>;
  /** the signer agent's rule over the decoded calls of an envelope: throws its refusal, returns the number of calls it needs */
  signer: {
    functions: string[];
    check(calls: DecodedCall[], intent: SignerIntent, ctx: SignerRuleContext): number;
  };
  /**
   * what the estimate (POST /api/v1/estimate) says of it beyond the common fields: Aave's variable borrow rate
   * (an action on the debt), and its own fields from the estimate's body (a conversion's target)
   */
  estimate?: { borrowRate?: boolean; fields?(body: Pick<ActionBody, "target">): Record<string, unknown> };
  /**
   * the command line (`signer-agent run <name> ...`): usage, what each flag its usage names means (its help,
   * `run`'s and `relay`'s), and the body it sends
   */
  cli: { usage: string; flags?: Record<string, string>; body(amount: number, flags: Record<string, string | boolean | undefined>): ActionBody };
}
