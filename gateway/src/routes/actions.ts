/**
 * Authenticated actions (spec 4.5), one route per action declaration (actions/*.ts), and their estimate
 * (spec 4.6). The reads of the treasury are routes/treasury-reads.ts, the delegation routes/delegation.ts,
 * receipts and the fee audit routes/receipts.ts, the relay of a wallet's signed steps routes/relay.ts.
 */
import { DECLARED, type TreasuryAction } from "@treasury/core/actions";
import type { ActionBody, ActionDeclaration } from "@treasury/core/actions/declaration";
import type { ErrorCode } from "@treasury/core/lib/errors";
import { SafetyRailError } from "@treasury/core/schemas/common";
import { requireCredential } from "../http/credential";
import { ActionReceipt, EstimateRequest, EstimateResult, UnsignedEnvelope } from "../schemas/actions";
import type { ActionOutcome, ActionRequest, ActionService } from "../services/action-service";
import { resolveAmount, type PreviewService } from "../services/preview-service";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

export interface ActionDeps {
  actions: ActionService;
  preview: PreviewService;
}

const AUTH_ERRORS = {
  ...bearerRefusals(),
  403: err("credential not bound to a treasury"),
  ...RATE_LIMITED,
};

/** what an action came to, as HTTP: executed or queued on a Safe (a receipt) 200, an unsigned envelope 202 */
const ACTION_STATUS = { executed: 200, queued_on_safe: 200, envelope_created: 202 } as const satisfies Record<ActionOutcome["kind"], number>;

/**
 * What the action service refuses an action with (services/action-service.ts, services/execution/): the
 * plan's refusals (the wallet's or the ledger's balances, the collateral or debt the action needs, the safety
 * rail, Aave's health factor under 1 after a downward leg: would_be_liquidatable; Aave's refusal of a step on the
 * sandbox's fork: borrow_refused or would_be_liquidatable), a Safe's action from a registration the Safe did
 * not prove, another action, envelope or Safe transaction of the treasury in flight, a step the sandbox's
 * fork did not execute, a chain that did not answer. One list for every declared action: a declaration does
 * not state its own refusals (no_debt is repay's; insufficient_collateral withdraw's, sell's and exit's).
 */
const ACTION_ERRORS: readonly ErrorCode[] = [
  "insufficient_balance",
  "insufficient_collateral",
  "no_debt",
  "ownership_not_proven",
  "ltv_limit_exceeded",
  "conflicting_operation",
  "borrow_refused",
  "would_be_liquidatable",
  "sandbox_execution_failed",
  "chain_unavailable",
];

function actionRequest(d: ActionDeclaration<TreasuryAction>, body: ActionBody): ActionRequest {
  // an amount in USDC (its aliases must agree), or in a token's units, valued when it is planned
  const usdc = !d.valueMicro || ((body.asset ?? "USDC") === "USDC" && (body.amount !== undefined || body.amount_usdc !== undefined));
  return { action: d.name, amountMicro: usdc ? resolveAmount(body.amount, body.amount_usdc) : 0n, params: d.params(body) };
}

export function actionRoutes(kit: RouteKit, deps: ActionDeps): void {
  /** one action capability, from its declaration (actions/*.ts): its route, x402 price and MCP tool (prepare_<action>) */
  const action = (d: ActionDeclaration<TreasuryAction>) =>
    kit.route<ActionBody, unknown, unknown>({
      method: "post",
      path: d.route.path,
      operationId: d.route.operationId,
      summary: d.route.summary,
      price: d.route.price,
      tool: { name: `prepare_${d.name}`, title: `Prepare a ${d.name}`, description: d.route.toolDescription },
      description:
        "Managed treasuries execute at once in simulation (200, receipt). Wallet-mode treasuries get 202 with an unsigned envelope of real Aave V3 calls; nothing changes until its steps are relayed. 409 while another envelope of the treasury awaits signature.",
      tags: ["Actions"],
      security: "bearer_or_x402",
      // a downward leg is never kept from by money: the wallet's own signature opens it too, free
      siwx: d.direction === "down",
      idempotencyKey: true,
      request: { body: d.body, example: d.route.example },
      responses: {
        200: {
          description:
            "action receipt (managed mode); `chain_execution` says whether it ran on chain (the sandbox's local fork: each step sent from the wallet by impersonation, only for a registration that proved its wallet), was queued for a Safe's owners, or was only computed (`simulated: true`; an unproven registration: `ledger: own_sandbox_ledger`, its own ledger, the wallet's chain state neither read nor changed)",
          schema: ActionReceipt,
        },
        202: { description: "unsigned transaction envelope (wallet mode)", schema: UnsignedEnvelope },
        400: err(
          "invalid body, missing Idempotency-Key, below the minimum, or not enough balance (insufficient_balance: on the sandbox's local chain a wallet-mode registration's envelope counts what the sandbox adds once the wallet's signed transaction is relayed; elsewhere the wallet's own balance counts)",
        ),
        ...AUTH_ERRORS,
        403: err(
          "credential not bound to a treasury, or ownership_not_proven: a managed action on a Safe from a registration that is not the one the Safe itself proved (nothing is queued)",
        ),
        409: err("a conflicting operation is pending, or the same Idempotency-Key is in progress"),
        422: err(
          "Idempotency-Key reused with a different body; borrow_refused (Aave refuses a managed sandbox borrow); would_be_liquidatable (a downward leg that would leave Aave's health factor under 1); sandbox_execution_failed (a managed sandbox step did not execute on the local fork)",
        ),
        ...(d.route.extraResponses ?? {}),
      },
      errors: ACTION_ERRORS,
      // the reservation's plan is kept by the service for this holder: the handler's perform carries it out
      reserve: async ({ body, res }, holder) => (await deps.actions.reserve(requireCredential(res).treasuryId, actionRequest(d, body), holder)).release,
      storeOnly: ({ res }) => deps.actions.storeOnly(requireCredential(res).treasuryId),
      handler: async ({ body, res }) => {
        const credential = requireCredential(res);
        const outcome = await deps.actions.perform(
          credential.treasuryId,
          actionRequest(d, body),
          credential.kind === "x402" ? "x402_payment" : credential.kind === "wallet_signature" ? "wallet_signature" : "api_request",
          res.locals.slotHolder as string | undefined,
        );
        return { status: ACTION_STATUS[outcome.kind], body: outcome.result };
      },
    });

  for (const d of DECLARED) action(d as ActionDeclaration<TreasuryAction>);

  kit.route({
    method: "post",
    path: "/api/v1/estimate",
    operationId: "estimateAction",
    summary: "Estimate the fee and LTV effect of an action on the authenticated treasury",
    tags: ["Actions"],
    security: "bearer_or_x402",
    price: { atomic: 10_000n, description: "Estimate the fee and LTV effect of an action" },
    tool: {
      name: "estimate_action",
      title: "Estimate an action",
      description:
        "Fee, net amount and LTV effect of a deposit, convert, borrow or repay on the authenticated treasury; changes nothing. Refused with ltv_limit_exceeded above the ceiling.",
      readOnly: true,
    },
    request: { body: EstimateRequest, example: { action: "deposit", amount_usdc: 1000 } },
    responses: {
      200: { description: "estimate (spec 2.3 and 4.6)", schema: EstimateResult },
      400: err("invalid body"),
      ...bearerRefusals(),
      403: { description: "safety rail (spec 2.2)", schema: SafetyRailError },
      ...RATE_LIMITED,
    },
    // the simulation's refusals (more collateral out than there is, the safety rail) and the chain position's read
    errors: ["insufficient_collateral", "ltv_limit_exceeded", "chain_unavailable"],
    handler: async ({ body, res }) => ({ status: 200, body: await deps.preview.estimateFor(requireCredential(res).treasuryId, body) }),
  });
}
