/** Authenticated actions, estimate, reads and relay (spec 4.5 to 4.8). */
import { DECLARED, type TreasuryAction } from "@treasury/core/actions";
import type { ActionBody, ActionDeclaration } from "@treasury/core/actions/declaration";
import { requireCredential } from "../http/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import { SafetyRailError } from "@treasury/core/schemas/common";
import {
  ActionReceipt,
  AuditList,
  AuditQuery,
  EstimateRequest,
  EstimateResult,
  HealthState,
  RelayPending,
  RelayReceipt,
  RelayRequest,
  RelayStatus,
  RelayStepParams,
  TreasuryState,
  UnsignedEnvelope,
} from "../schemas/actions";
import { PolicyState } from "../schemas/public";
import { SignedProof } from "../schemas/treasuries";
import type { ActionOutcome, ActionRequest, ActionService } from "../services/action-service";
import type { PolicyService } from "../services/policy-service";
import { resolveAmount, type PreviewService } from "../services/preview-service";
import { relayScope, type RelayOutcome, type RelayService } from "../services/relay-service";
import type { TreasuryService } from "../services/treasury-service";
import type { DelegationService } from "../services/delegation-service";
import { z } from "@treasury/core/schemas/zod";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

const RECEIPT_PREFIXES = [...DECLARED.map((d) => d.idPrefix), "exe"];
export const ReceiptIdParams = z.object({
  id: z
    .string()
    .regex(
      new RegExp(`^(${RECEIPT_PREFIXES.join("|")})_[0-9a-f]{32}$`),
      `must be a receipt id (${RECEIPT_PREFIXES.map((p) => `${p}_`).join(", ")} and 32 hex digits)`,
    ),
});

export const DelegationRequest = z
  .strictObject({
    module: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    protect_below_health_score: z.number().min(1.05).max(3).multipleOf(0.01).optional().openapi({
      multipleOf: 0.01,
      description: "a tighter protect threshold than the preset's (operator-configurable); it must be the value the Safe signed",
    }),
    safe_proof: SignedProof.openapi({
      description:
        "The Safe's own signature (EIP-1271, by its owners) of AttachDelegation(string service, string treasuryId, address safe, address module, uint256 protectBelowHealthCentis, uint256 parkTargetBps, uint256 maxSlippageBps, string nonce, string issuedAt) in the domain {name: 'Agent Treasury Gateway', version: '1', chainId}. protectBelowHealthCentis is the threshold x 100 (the preset's when none is given); parkTargetBps the preset's park target in basis points; maxSlippageBps the module's swap bound (requirements.max_slippage_bps). Attaching another module while the one in force is enabled on the Safe stages an upgrade (pending_upgrade): the module in force keeps protecting until the owners enable the new one (change=upgrade).",
    }),
  })
  .openapi("DelegationRequest");

export const DelegationDocument = z
  .object({
    object: z.literal("delegation"),
    treasury_id: z.string(),
    state: z.enum(["not_granted", "approved_pending_funds", "active", "revoked_pending_settlement", "revoked"]),
    module: z.string().nullable(),
    pending_upgrade: z
      .object({ module: z.string(), protect_below_health_score: z.number(), staged_at: z.string(), enable_with: z.string() })
      .nullable()
      .openapi({
        description:
          "a newer module the Safe signed for while the one in force is enabled: it takes over once the owners execute the change=upgrade Safe transaction",
      }),
    requirements: z.record(z.string(), z.unknown()),
    protection_actions: z.array(z.record(z.string(), z.unknown())),
    gas: z
      .object({ per_action_usd: z.number(), per_month_usd: z.number(), applies_to: z.string(), spent_this_month_usd: z.number() })
      .openapi({ description: "the protection engine's gas caps, and what it spent on this Safe this calendar month (UTC)" }),
  })
  .passthrough()
  .openapi("Delegation");

const DelegationChangeQuery = z.object({
  change: z.enum(["approve", "revoke", "upgrade"]).openapi({
    param: { name: "change", in: "query" },
    description:
      "approve: enableModule; revoke: disableModule; upgrade: enableModule of the staged module and disableModule of the one in force, in one Safe transaction (MultiSendCallOnly)",
  }),
});

const DelegationChange = z
  .object({
    object: z.literal("delegation_change"),
    change: z.enum(["approve", "revoke", "upgrade"]),
    treasury_id: z.string(),
    safe: z.string(),
    module: z.string(),
    replaces: z.string().optional().openapi({ description: "upgrade: the module in force, disabled by the same Safe transaction" }),
    chain_id: z.number().int(),
    safe_tx: z.record(z.string(), z.unknown()),
    safe_tx_hash: z.string(),
    typed_data: z.record(z.string(), z.unknown()),
    execute: z.object({ to: z.string(), function: z.string(), how: z.string() }),
  })
  .openapi("DelegationChange");

export interface ActionDeps {
  actions: ActionService;
  relay: RelayService;
  preview: PreviewService;
  policy: PolicyService;
  treasuries: TreasuryService;
  delegation: DelegationService;
}

const AUTH_ERRORS = {
  ...bearerRefusals(),
  403: err("credential not bound to a treasury"),
  ...RATE_LIMITED,
};

/** what an action came to, as HTTP: executed or queued on a Safe (a receipt) 200, an unsigned envelope 202 */
const ACTION_STATUS = { executed: 200, queued_on_safe: 200, envelope_created: 202 } as const satisfies Record<ActionOutcome["kind"], number>;
/** what a relay came to, as HTTP: recorded or the same transaction again 200, sent and not mined yet 202 */
const RELAY_STATUS = { relayed: 200, replayed: 200, broadcasting: 202 } as const satisfies Record<RelayOutcome["kind"], number>;

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
          "invalid body, missing Idempotency-Key, below the minimum, or not enough balance (insufficient_balance: the sandbox's local chain funds the wallet only for a registration that proved it; elsewhere, and for an unproven wallet-mode registration, the wallet's own balance counts)",
        ),
        ...AUTH_ERRORS,
        403: err(
          "credential not bound to a treasury, or ownership_not_proven: a managed action on a Safe from a registration that is not the one the Safe itself proved (nothing is queued)",
        ),
        409: err("a conflicting operation is pending, or the same Idempotency-Key is in progress"),
        422: err("Idempotency-Key reused with a different body; sandbox_execution_failed (a managed sandbox step did not execute on the local fork)"),
        ...(d.route.extraResponses ?? {}),
      },
      reserve: ({ body, res }, holder) => deps.actions.reserve(requireCredential(res).treasuryId, actionRequest(d, body), holder),
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
    handler: async ({ body, res }) => ({ status: 200, body: await deps.preview.estimateFor(requireCredential(res).treasuryId, body) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/health",
    operationId: "getHealth",
    summary: "Health score, LTV and zones of the authenticated treasury",
    tags: ["Reads"],
    security: "bearer_or_x402",
    price: { atomic: 1_000n, description: "Treasury health score, LTV and zones" },
    tool: { name: "get_health", title: "Treasury health", description: "Health score, LTV, LTV zone and zone bounds of the authenticated treasury." },
    responses: { 200: { description: "health state (spec 2.9)", schema: HealthState }, ...bearerRefusals(), ...RATE_LIMITED },
    handler: async ({ res }) => ({ status: 200, body: await deps.treasuries.health(requireCredential(res).treasuryId) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/treasury",
    operationId: "getTreasuryState",
    summary: "State of the authenticated treasury",
    tags: ["Reads"],
    security: "bearer_or_x402",
    price: { atomic: 1_100n, description: "Treasury state" },
    tool: {
      name: "get_treasury_state",
      title: "Treasury state",
      description: "Holdings, value, debt, LTV, health and utilization of the authenticated treasury.",
    },
    responses: { 200: { description: "treasury state (spec 2.8)", schema: TreasuryState }, ...bearerRefusals(), ...RATE_LIMITED },
    handler: async ({ res }) => ({ status: 200, body: await deps.treasuries.state(requireCredential(res).treasuryId) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/policy-state",
    operationId: "getPolicyState",
    summary: "Policy state of the authenticated treasury",
    tags: ["Reads"],
    security: "bearer_or_x402",
    price: { atomic: 1_200n, description: "Treasury policy state" },
    responses: { 200: { description: "policy state (spec 2.12)", schema: PolicyState }, ...bearerRefusals(), ...RATE_LIMITED },
    handler: async ({ res }) => {
      const t = await deps.actions.treasury(requireCredential(res).treasuryId);
      return { status: 200, body: await deps.policy.forTreasury(t) };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/delegation",
    operationId: "getDelegation",
    summary: "Delegation state of the authenticated managed treasury (extension)",
    description:
      "Extension of the spec: the lifecycle state derived from the chain (module enabled on the Safe, funds, automation transactions in flight), the module, what a module must be to be accepted, and the protection engine's actions.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    responses: { 200: { description: "delegation", schema: DelegationDocument }, ...bearerRefusals(), ...RATE_LIMITED },
    handler: async ({ res }) => ({ status: 200, body: await deps.delegation.view(await deps.actions.treasury(requireCredential(res).treasuryId)) }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/delegation",
    operationId: "registerDelegation",
    summary: "Register the ProtectionModule the operator deployed for its Safe (extension)",
    description:
      "The operator approves delegation on chain (its Safe transaction enableModule); this call tells the gateway which module to watch, with the Safe's own signature (safe_proof, EIP-1271) over the treasury id, module and thresholds. The module is checked on chain: its Safe, Pool, automation address and park target must be the treasury's. One Safe has at most one delegation: a proven one moves it from any other treasury.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    request: { body: DelegationRequest },
    responses: {
      200: { description: "delegation", schema: DelegationDocument },
      400: err("not a matching ProtectionModule (invalid_module), or a Safe proof that does not verify (invalid_safe_proof)"),
      ...bearerRefusals("no automation address or no RPC for the chain"),
      409: err("the treasury is not managed"),
      ...RATE_LIMITED,
    },
    handler: async ({ res, body }) => ({
      status: 200,
      body: await deps.delegation.register(
        await deps.actions.treasury(requireCredential(res).treasuryId),
        body.module as `0x${string}`,
        body.protect_below_health_score,
        body.safe_proof,
      ),
    }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/delegation/safe-transaction",
    operationId: "prepareDelegationChange",
    summary: "Approve or revoke delegation, prepared as a Safe transaction for the owners (extension)",
    description:
      "Extension of the spec: enableModule (approve) or disableModule (revoke) of the attached ProtectionModule as a Safe transaction at the Safe's current nonce: its fields, SafeTx hash and EIP-712 typed data. The owners sign it and an owner's wallet executes it; the service never does.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    request: { query: DelegationChangeQuery },
    responses: {
      200: { description: "the Safe transaction to sign and execute", schema: DelegationChange },
      400: err("invalid query"),
      ...bearerRefusals("no RPC for the Safe's chain"),
      409: err("no module attached, no upgrade staged, or already in the state asked for (invalid_transition)"),
      ...RATE_LIMITED,
    },
    handler: async ({ res, query }) => ({
      status: 200,
      body: await deps.delegation.changeTransaction(
        await deps.actions.treasury(requireCredential(res).treasuryId),
        (query as { change: "approve" | "revoke" | "upgrade" }).change,
      ),
    }),
  });

  kit.route<unknown, z.infer<typeof AuditQuery>, unknown>({
    method: "get",
    path: "/api/v1/audit",
    operationId: "getFeeAudit",
    summary: "Fee audit trail of the authenticated treasury (extension)",
    description: "Extension of the spec: every execution with amount, fee, basis, tier, trigger and time (spec 1, rule 5).",
    tags: ["Reads"],
    security: "bearer_or_x402",
    price: { atomic: 1_300n, description: "Treasury fee audit trail" },
    extension: true,
    request: { query: AuditQuery },
    responses: {
      200: { description: "a page of the fee audit trail, oldest first (`limit` entries, default 100)", schema: AuditList },
      400: err("invalid limit or cursor"),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    handler: async ({ res, query }) => {
      const treasuryId = requireCredential(res).treasuryId;
      return { status: 200, body: await deps.treasuries.auditView(treasuryId, query) };
    },
  });

  kit.route<unknown, unknown, { id: string }>({
    method: "get",
    path: "/api/v1/receipts/:id",
    operationId: "getReceipt",
    tool: {
      name: "get_receipt",
      title: "A receipt",
      description:
        "A receipt of the authenticated treasury read again by its id (deposit_id, conversion_id, borrow_id, repayment_id, or a relayed envelope's execution id).",
    },
    summary: "A receipt of the authenticated treasury, by its id (extension)",
    description:
      "Extension of the spec: the receipt an executed action answered (deposit_id, conversion_id, borrow_id or repayment_id of a managed action; the execution of a relayed envelope), as recorded when it executed, read again; the answer's `chain_execution` (how that request ran) is not part of it. Another treasury's receipt is not found.",
    tags: ["Reads"],
    security: "bearer",
    extension: true,
    request: { params: ReceiptIdParams },
    responses: {
      200: { description: "the receipt as recorded when the action executed", schema: ActionReceipt },
      400: err("not a receipt id"),
      ...bearerRefusals(),
      404: err("no receipt of this treasury has this id"),
      ...RATE_LIMITED,
    },
    handler: async ({ res, params }) => {
      const receipt = await deps.treasuries.receipt(requireCredential(res).treasuryId, params.id);
      if (!receipt) throw new TreasuryError("not_found", `no receipt ${params.id} for this treasury`);
      return { status: 200, body: receipt };
    },
  });

  kit.route({
    method: "post",
    path: "/api/v1/relay",
    operationId: "relayTransaction",
    tool: {
      name: "relay_signed_transaction",
      title: "Relay a signed transaction",
      description:
        "Relay one signed step of an envelope (legacy, EIP-2930 or EIP-1559). Accepted only if the treasury's wallet signed exactly the step's to, data, value and chain id; steps go in order.",
      openWorld: true,
    },
    summary: "Relay a signed transaction: the envelope's unsigned_transaction under its tx_id, or one step of it",
    description:
      "One signature: sign the envelope's `unsigned_transaction` with the wallet's next nonce and relay it under the envelope's `tx_id`. In the sandbox (a local test chain) the envelope's other steps are provided without a signature (fee moved from the wallet to the fee recipient, approvals set, a swap filled at its quoted minimum) and listed in `provided_steps`; elsewhere 409 `prerequisite_steps_required` names them. Steps: accepted only if it is signed by the treasury's wallet and its to, data, value and chain id equal the step's. Steps are relayed in order; the action executes when the last one is relayed. For a chain-backed treasury the transaction's nonce must be the wallet's next one, the step is claimed (hash recorded) before it is broadcast, and a second signature of a claimed step is refused without being sent; a receipt that does not come in time answers 202 `broadcasting` (poll GET /api/v1/relay/{tx_id}, or relay the same bytes again). The same signed transaction relayed again, under any Idempotency-Key (a retry after a lost answer or a gateway crash), answers the step's receipt once it is mined, never a second execution. Sandbox treasuries are simulated. Idempotency-Keys are scoped to the transaction's signer, so callers cannot collide.",
    tags: ["Wallet loop"],
    idempotencyKey: true,
    request: { body: RelayRequest },
    responses: {
      200: { description: "relay receipt (spec 2.6); also the answer to the same signed transaction relayed again", schema: RelayReceipt },
      202: { description: "sent, not mined yet: the step is claimed and reconciled later", schema: RelayPending },
      400: err(
        "invalid body or a signed transaction that does not match (signer_mismatch, to_mismatch, data_mismatch, value_mismatch, chain_id_mismatch, invalid_signed_transaction)",
      ),
      404: err("unknown tx_id"),
      409: err(
        "already_relayed: another signature of a relayed step (carries the first tx_hash); step_in_flight (another signature of the step is being broadcast), step_out_of_order, nonce_not_next (carries expected_nonce), or prerequisite_steps_required (a one-signature relay outside the sandbox; carries prerequisite_steps); conflicting_operation with Retry-After (a simulated treasury's relay that kept colliding with another request of the store at the same moment: nothing was done, retry)",
      ),
      410: err("envelope expired"),
      422: err(
        "Idempotency-Key reused with a different body; transaction_would_revert, broadcast_rejected or transaction_reverted (the step awaits a new signature)",
      ),
      503: err("the chain did not answer"),
      ...RATE_LIMITED,
    },
    idempotencyScope: ({ body }) => relayScope(body.tx_id, body.signed_transaction),
    storeOnly: ({ body }) => deps.relay.storeOnly(body.tx_id),
    handler: async ({ body }) => {
      const outcome = await deps.relay.relay(body.tx_id, body.signed_transaction as `0x${string}`);
      return { status: RELAY_STATUS[outcome.kind], body: outcome.result };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/relay/:tx_id",
    operationId: "getRelayStatus",
    summary: "State of one step's relay, reconciled with the chain (extension)",
    description:
      "awaiting_signature, broadcasting (sent, not mined yet; reconciled on every read) or relayed (with its receipt), and the signatures of the step that did not execute.",
    tags: ["Wallet loop"],
    extension: true,
    request: { params: RelayStepParams },
    responses: {
      200: { description: "relay status", schema: RelayStatus },
      400: err("malformed tx_id"),
      404: err("unknown tx_id"),
      503: err("the chain did not answer"),
      ...RATE_LIMITED,
    },
    handler: async ({ params }) => ({ status: 200, body: await deps.relay.status(params.tx_id) }),
  });
}
