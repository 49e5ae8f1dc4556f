/**
 * Delegation of a managed treasury's protection (extension): its state, the ProtectionModule the operator
 * deployed for its Safe (registered with the Safe's own signature), and the Safe transactions that approve,
 * revoke or upgrade it, prepared for the owners (services/delegation-service.ts).
 */
import { requireCredential } from "../http/credential";
import { SignedProof } from "../schemas/treasuries";
import { z } from "@treasury/core/schemas/zod";
import type { ActionService } from "../services/action-service";
import type { DelegationService } from "../services/delegation-service";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

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

export interface DelegationDeps {
  actions: ActionService;
  delegation: DelegationService;
}

export function delegationRoutes(kit: RouteKit, deps: DelegationDeps): void {
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
    errors: ["chain_unavailable"],
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
    errors: ["invalid_safe_proof", "invalid_module", "not_managed", "chain_unavailable", "automation_unconfigured"],
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
    errors: ["invalid_transition", "chain_unavailable"],
    handler: async ({ res, query }) => ({
      status: 200,
      body: await deps.delegation.changeTransaction(
        await deps.actions.treasury(requireCredential(res).treasuryId),
        (query as { change: "approve" | "revoke" | "upgrade" }).change,
      ),
    }),
  });
}
