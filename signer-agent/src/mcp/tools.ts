/**
 * The signer agent's MCP tools, declared for an LLM: what each does, what it costs, what it refuses; input
 * schemas with their units; output schemas; annotations. The action tools come from the gateway's declarations
 * (cli/actions.ts: each action's amount, flags and their values), never restated here.
 */
import { z } from "zod";
import { declarationOf, type TreasuryAction } from "@treasury/core/actions";
import type { ActionUsage } from "../cli/actions";

/** an amount as decimal text, exact: digits and at most one point, at most 6 decimals */
export const DECIMAL = /^\d+(\.\d{1,6})?$/;

const amountOf = (u: ActionUsage) =>
  z
    .string()
    .regex(DECIMAL, 'a decimal number as text, digits and at most one point, at most 6 decimals, e.g. "500" or "0.25"')
    .describe(
      u.amount === "amount_usdc"
        ? 'how much, in whole USDC as decimal text ("500" = 500 USDC; up to 6 decimals)'
        : 'how much, in the asset\'s own units as decimal text ("0.5" = 0.5 ETH with asset eth; USDC when asset is usdc; up to 6 decimals)',
    );

/** an action tool's input schema: its amount (if it takes one) and its flags, with their values */
export function actionInput(u: ActionUsage) {
  const shape: Record<string, z.ZodType> = {};
  if (u.amount) shape.amount = amountOf(u);
  for (const f of u.flags) {
    const field = f.choices ? z.enum(f.choices as [string, ...string[]]).describe(f.about) : z.boolean().describe(f.about);
    shape[f.name] = f.required ? field : field.optional();
  }
  return z.object(shape).strict();
}

/** exact figures as decimal strings */
const Exact = z.string().describe("an exact decimal figure as text");

export const PositionOutput = z.object({
  address: z.string().describe("the agent's wallet (the key stays in the signer agent)"),
  position: z
    .object({
      chain: z.string(),
      chain_id: z.number().int(),
      collateral_usd: Exact,
      debt_usd: Exact,
      ltv_pct: Exact.nullable(),
      health_factor: Exact.nullable().describe("null without debt"),
      supplied: z.record(z.string(), Exact).describe("aToken balances, in each asset's units"),
      wallet: z.object({ usdc: Exact, eth: Exact }),
    })
    .nullable()
    .describe("null when the chain has no treasury market"),
});

export const ActionOutput = z.object({
  action: z.string(),
  tx_id: z.string().describe("the gateway's envelope"),
  steps: z.array(z.string()).describe("each signed call, decoded from its calldata"),
  receipts: z.array(
    z.object({ tx_id: z.string(), tx_hash: z.string(), status: z.string(), block_number: z.number().int().nullable(), simulated: z.boolean() }).passthrough(),
  ),
  fee_usdc: Exact.describe("the service fee the envelope paid, USDC"),
  resulting_ltv: z.number().nullable().describe("the LTV after, as the gateway's receipt states it (percent)"),
  position_after: PositionOutput.shape.position,
  confirmed_by_user: z.boolean().describe("whether a person said yes before it was signed"),
});

export const BudgetOutput = z.object({
  scheme: z.string().describe("how x402 is paid: exact (a transfer a call), session (a channel deposit, then vouchers), or bearer (an API key, nothing paid)"),
  max_price_usdc: Exact,
  daily_budget_usdc: Exact,
  spent_today_usdc: Exact,
  left_today_usdc: Exact,
  deposited_today_usdc: Exact.describe("USDC put into an x402 session channel today (held there, not spent)"),
  daily_signing_cap_usdc: Exact,
  signed_today_usdc: Exact,
  per_transaction_cap_usdc: Exact,
  confirm_above_usdc: Exact.nullable().describe("an action moving more than this asks a person first (null: never by amount)"),
  confirm_actions: z.array(z.string()).describe("actions that always ask a person first"),
  session_channels: z.array(z.record(z.string(), z.unknown())).describe("the x402 session channels kept on disk (their state, no secrets)"),
});

export const AuditOutput = z.object({ entries: z.array(z.record(z.string(), z.unknown())), total: z.number().int() });

export const PreviewOutput = z.object({ preview: z.record(z.string(), z.unknown()).describe("the gateway's action_preview answer"), current_ltv: z.number() });

const COST =
  "Costs: the gateway's x402 price for the request (paid by the signer agent within its policy's price cap and daily x402 budget, or free with a bearer key; a downward leg signs in instead of paying), the 2% service fee in the envelope where the action has one, and gas on the chain.";
const REFUSES =
  "Refused before any signature: anything the policy does not allow (decoded calldata: chains, contracts, functions, spenders, recipients, the per-transaction and daily caps, the fee and slippage bounds), the gateway's refusals (e.g. ltv_limit_exceeded over the LTV ceiling), a preflight that reverts on the fork. Above the policy's confirm_above_usdc, or for an action in confirm_actions, a person is asked first (summary of the decoded calls, amounts, fee, LTV after); a no, or a host that cannot ask, signs nothing.";

/** what an action tool says of itself */
export function actionDescription(action: TreasuryAction): string {
  const d = declarationOf(action);
  return `${d.route.summary}. Runs the whole loop with the signer agent's own key: asks the gateway for the envelope, checks every step against the policy on its decoded calldata, preflights it on the fork, signs, relays and reads the result back; returns the receipts and the position after. The key never leaves the signer agent. ${COST} ${REFUSES}`;
}

export const READ_TOOLS = {
  position: {
    title: "Position and health",
    description:
      "The agent wallet's Aave V3 position read on the chain: collateral and debt (USD), LTV (percent), health factor, aTokens supplied and wallet balances, exact decimal text. Free, reads only, refuses nothing.",
  },
  preview: {
    title: "Preview an action",
    description:
      "Estimate an action before doing it: the gateway's public preview (fee, LTV before and after, the zone) for the amount from the wallet's current LTV. Free, signs nothing; the gateway refuses what would cross the LTV ceiling (ltv_limit_exceeded, with safe_amount).",
  },
  x402_budget: {
    title: "x402 budget, caps and sessions",
    description:
      "What the signer agent may still spend today: the x402 price cap and daily budget (spent, left), the session channel deposits and their state, the daily signing cap, the per-transaction cap, and when a person is asked. Free, reads only the agent's own log.",
  },
  audit_log: {
    title: "Audit log",
    description:
      "The signer agent's audit log, newest last: every signature, refusal, relay, executed action and x402 payment (no keys, no signatures). Free, reads only.",
  },
} as const;
