import { z } from "@treasury/core/schemas/zod";

export const AgentDiscovery = z
  .object({
    name: z.string(),
    description: z.string(),
    categories: z.array(z.string()),
    mcp_url: z.string().url(),
    openapi_url: z.string().url(),
    fees_url: z.string().url(),
    sandbox_url: z.string().url(),
    human_approval_required: z.boolean(),
    supported_assets: z.array(z.string()),
    supported_interfaces: z.array(z.enum(["MCP", "REST", "x402"])),
    trust_url: z.string().url().optional(),
    security_url: z.string().url().optional(),
    status_url: z.string().url().optional(),
  })
  .passthrough()
  .openapi("AgentDiscovery", { description: "spec 2.15" });

export const FeeSchedule = z
  .object({
    object: z.literal("service_fee_schedule"),
    current_tier: z.object({
      tier: z.string(),
      deposit_fee_pct: z.number(),
      buy_fee_pct: z.number(),
      cycle_fee_pct: z.number(),
    }),
    protection_costs: z
      .object({ service_fee_pct: z.literal(0), max_swap_slippage_bps: z.number().int(), swap: z.string(), flash_loan: z.string(), gas: z.string() })
      .openapi({
        description:
          "what a protection action costs: no service fee; the swap's bound against Aave's oracle, Aave's flash premium when used, gas paid by the service",
      }),
  })
  .passthrough()
  .openapi("FeeSchedule", { description: "spec 2.16 (open object)" });

export const McpDiscovery = z
  .object({
    name: z.string(),
    endpoint: z.string().url(),
    status: z.string(),
    tools: z.array(z.object({ name: z.string() }).passthrough()),
  })
  .passthrough()
  .openapi("McpDiscovery");

export const JsonRpcRequest = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z
      .union([z.string(), z.number().int(), z.null()])
      .optional()
      .openapi({ description: "string, integer or null (JSON-RPC 2.0: numbers without fractional parts); absent for a notification" }),
    method: z.string(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi("JsonRpcRequest");

export const JsonRpcResponse = z
  .object({ jsonrpc: z.literal("2.0") })
  .passthrough()
  .openapi("JsonRpcResponse");
