/**
 * Reads of the authenticated treasury (spec 4.7): its health, its state and its policy state, each priced
 * for an x402 payer, and free with the wallet's own signature (sign-in-with-x: services/wallet-signature.ts)
 * for the treasury that wallet stands behind; the 402 offers both. A chain-backed treasury's figures are read from its chain (its relay steps in flight
 * reconciled first), and its delegation's state with them: a chain that does not answer is 503 chain_unavailable.
 */
import { requireCredential } from "../http/credential";
import { HealthState, TreasuryState } from "../schemas/actions";
import { PolicyState } from "../schemas/public";
import type { ActionService } from "../services/action-service";
import type { PolicyService } from "../services/policy-service";
import type { TreasuryService } from "../services/treasury-service";
import { bearerRefusals, RATE_LIMITED, type RouteKit } from "./kit";

export interface TreasuryReadDeps {
  actions: ActionService;
  policy: PolicyService;
  treasuries: TreasuryService;
}

export function treasuryReadRoutes(kit: RouteKit, deps: TreasuryReadDeps): void {
  kit.route({
    method: "get",
    path: "/api/v1/health",
    operationId: "getHealth",
    summary: "Health score, LTV and zones of the authenticated treasury",
    tags: ["Reads"],
    security: "bearer_or_x402",
    price: { atomic: 1_000n, description: "Treasury health score, LTV and zones" },
    siwx: true,
    tool: { name: "get_health", title: "Treasury health", description: "Health score, LTV, LTV zone and zone bounds of the authenticated treasury." },
    responses: { 200: { description: "health state (spec 2.9)", schema: HealthState }, ...bearerRefusals(), ...RATE_LIMITED },
    errors: ["chain_unavailable"],
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
    siwx: true,
    tool: {
      name: "get_treasury_state",
      title: "Treasury state",
      description: "Holdings, value, debt, LTV, health and utilization of the authenticated treasury.",
    },
    responses: { 200: { description: "treasury state (spec 2.8)", schema: TreasuryState }, ...bearerRefusals(), ...RATE_LIMITED },
    errors: ["chain_unavailable"],
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
    siwx: true,
    responses: { 200: { description: "policy state (spec 2.12)", schema: PolicyState }, ...bearerRefusals(), ...RATE_LIMITED },
    errors: ["chain_unavailable"],
    handler: async ({ res }) => {
      const t = await deps.actions.treasury(requireCredential(res).treasuryId);
      return { status: 200, body: await deps.policy.forTreasury(t) };
    },
  });
}
