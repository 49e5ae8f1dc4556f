/**
 * Every action, declared once (one file each, beside its tests), and what is
 * derived from them: the lists, the types, fee kinds and directions. The
 * treasury actions are registered in this order (routes, MCP tools, x402
 * prices); the public preview (spec 4.3) knows them and a few more kinds the
 * service runs itself or only previews (protection and the automated legs).
 */
import { feeFor, type Fee } from "../domain/fees";
import { formatDecimal, type Micro } from "../domain/money";
import type { ActionParams } from "../domain/sandbox-ledger";
import { repayFromCollateral, simulate, type Position, type PositionRule, type Simulation } from "../domain/position";
import type { Preset } from "../domain/presets";
import { borrow } from "./borrow";
import { convert } from "./convert";
import type { ActionDeclaration } from "./declaration";
import { deposit } from "./deposit";
import { exit } from "./exit";
import { repay } from "./repay";
import { sell } from "./sell";
import { withdraw } from "./withdraw";

/** the actions a treasury executes: a route, an MCP tool, an x402 price, an envelope, a Safe transaction each */
const BUILT_IN = [deposit, convert, borrow, repay, withdraw, sell, exit] as const;
export type TreasuryAction = (typeof BUILT_IN)[number]["name"];
/** the declarations, in registration order: a new action is its file and its line in BUILT_IN */
export const DECLARED: ActionDeclaration<TreasuryAction>[] = [...BUILT_IN] as ActionDeclaration<TreasuryAction>[];
export const TREASURY_ACTIONS = DECLARED.map((d) => d.name);

/** kinds the public preview knows without a route of their own: the downward legs not yet executable, and the service's own protection */
const PREVIEW_ONLY = [
  { name: "protection", fee: "none", effect: repayFromCollateral },
  { name: "auto_repay", fee: "none", effect: repayFromCollateral },
  { name: "auto_deleverage", fee: "none", effect: repayFromCollateral },
] as const satisfies readonly PositionRule[];

/** every action the preview and the audit trail know (spec 4.3) */
export const ACTIONS = [...TREASURY_ACTIONS, ...PREVIEW_ONLY.map((k) => k.name)] as [
  TreasuryAction | (typeof PREVIEW_ONLY)[number]["name"],
  ...(TreasuryAction | (typeof PREVIEW_ONLY)[number]["name"])[],
];
export type Action = (typeof ACTIONS)[number];

const RULES = new Map<string, PositionRule>([...DECLARED, ...PREVIEW_ONLY].map((r) => [r.name, r]));

/** an action's position rule (fee kind, effect, safe amount) */
export function ruleOf(action: Action): PositionRule {
  return RULES.get(action)!;
}

/** a treasury action's declaration */
export function declarationOf(action: TreasuryAction): ActionDeclaration<TreasuryAction> {
  return DECLARED.find((d) => d.name === action)!;
}

/** upward legs pay a fee; downward legs are always free (spec fee rule 4) */
export const isUpwardLeg = (action: Action): boolean => ruleOf(action).fee !== "none";
export const feeKindOf = (action: Action) => ruleOf(action).fee;

/** the actions that are free, in the order of ACTIONS (fees.json free_actions) */
export const FREE_ACTIONS = ACTIONS.filter((a) => !isUpwardLeg(a));

/**
 * One more declaration, as if it were a line of BUILT_IN (test/gateway/action-recipe.test.ts proves a
 * declaration alone is enough): every list above takes it. The gateway's and the signer agent's modules
 * derive their routes, schemas and rules when they load, so it is registered before they are imported.
 */
export function registerAction(declaration: ActionDeclaration<string>): void {
  const d = declaration as ActionDeclaration<TreasuryAction>;
  if (RULES.has(d.name)) throw new Error(`the action ${d.name} is already declared`);
  DECLARED.push(d);
  TREASURY_ACTIONS.push(d.name);
  ACTIONS.splice(TREASURY_ACTIONS.length - 1, 0, d.name);
  RULES.set(d.name, d);
  if (d.fee === "none") FREE_ACTIONS.splice(FREE_ACTIONS.length - PREVIEW_ONLY.length, 0, d.name);
}

/** the fee of an action on an amount at a ratchet tier */
export const feeOf = (action: Action, amountMicro: Micro, tierIndex = 0): Fee => feeFor(feeKindOf(action), amountMicro, tierIndex);

/** an action run against a position under a preset's ceiling (domain/position.ts `simulate` with the action's rule) */
export const simulateAction = (p: Position, action: Action, amountMicro: Micro, preset: Preset, tierIndex = 0): Simulation =>
  simulate(p, ruleOf(action), amountMicro, preset, tierIndex);

/** one line saying what an action does, for a person about to sign it */
export const titleOf = (action: TreasuryAction, params: ActionParams, amountMicro: Micro): string => {
  const d = declarationOf(action);
  return d.title ? d.title(params, amountMicro) : `${action} ${formatDecimal(amountMicro, 6)} USDC`;
};
