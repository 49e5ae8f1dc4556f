/** Live access requests (spec 4.9). */
import { AccessRequest, AccessRequestBody, AccessRequestIdParams, AccessSchemaDocument } from "../schemas/agents";
import { z } from "@treasury/core/schemas/zod";
import type { AccessRequestService } from "../services/access-request-service";
import { REVIEW_PROCESS, STATUS_MEANING } from "../services/access-request-service";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

export function agentRoutes(kit: RouteKit, access: AccessRequestService): void {
  const tags = ["Live access"];

  kit.route({
    method: "get",
    path: "/api/v1/agents/apply",
    operationId: "getAccessRequestSchema",
    summary: "Input schema of a live access request",
    tags,
    responses: { 200: { description: "access request schema", schema: AccessSchemaDocument }, ...RATE_LIMITED },
    handler: () => ({
      status: 200,
      body: {
        object: "agent_access_schema",
        required: ["operator_name", "operator_email", "use_case"],
        input_schema: z.toJSONSchema(AccessRequestBody, { io: "input", unrepresentable: "any" }),
        review_process: REVIEW_PROCESS,
        status_meaning: STATUS_MEANING,
      },
    }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/agents/apply",
    operationId: "submitAccessRequest",
    summary: "Request live access; a human reviews every request",
    tool: {
      name: "request_live_access",
      title: "Request live access",
      description:
        "Ask for live (real-money) access. A human reviews every request (typically within 2 business days) and contacts the operator; poll the returned status_url.",
      idempotent: false,
      openWorld: true,
    },
    tags,
    request: {
      body: AccessRequestBody,
      example: {
        operator_name: "Ada Lovelace",
        operator_email: "ada@example.com",
        use_case: "Keep an agent's idle USDC supplied on Aave and borrow against it within the balanced band",
        agent_name: "ledger-keeper",
        wallet_address: "0x1111111111111111111111111111111111111111",
        chain: "base",
        expected_monthly_volume_usdc: 25000,
      },
    },
    responses: { 200: { description: "access request (spec 2.11), status received", schema: AccessRequest }, 400: err("invalid body"), ...RATE_LIMITED },
    handler: async ({ body }) => ({ status: 200, body: await access.submit(body) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/agents/apply/:id",
    operationId: "getAccessRequest",
    summary: "Status of a live access request",
    tags,
    request: { params: AccessRequestIdParams },
    responses: {
      200: { description: "access request (spec 2.11)", schema: AccessRequest },
      400: err("malformed id"),
      404: err("unknown access request"),
      ...RATE_LIMITED,
    },
    errors: ["access_request_not_found"],
    handler: async ({ params }) => ({ status: 200, body: access.publicView(await access.get(params.id)) }),
  });
}
