/** GET and POST /api/mcp (spec 4.2, 2.19). */
import { TreasuryError } from "@treasury/core/lib/errors";
import { handleMcpPost, MCP_SERVER_NAME, type McpDeps } from "../mcp/server";
import { restEquivalent, type ToolDefinition } from "../mcp/tools";
import { JsonRpcRequest, JsonRpcResponse, McpDiscovery } from "../schemas/discovery";
import { z } from "@treasury/core/schemas/zod";
import type { Runtime } from "../services/context";
import type { PaymentGate } from "../x402/payment-gate";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

export function mcpRoutes(
  kit: RouteKit,
  ctx: Runtime,
  deps: {
    tools: () => ToolDefinition[];
    version: string;
    log: (err: unknown) => void;
    payments?: PaymentGate;
    walletSignature?: McpDeps["walletSignature"];
    receipts?: McpDeps["receipts"];
    bus?: McpDeps["bus"];
    subscribed?: McpDeps["subscribed"];
  },
): void {
  kit.route({
    method: "get",
    path: "/api/mcp",
    operationId: "getMcpDiscovery",
    summary: "MCP server metadata and tool list",
    description: "A client asking for an SSE stream (Accept: text/event-stream) gets 405: the server is stateless and answers every POST with JSON.",
    tags: ["MCP"],
    responses: {
      200: { description: "MCP discovery", schema: McpDiscovery },
      403: err("DNS-rebinding guard: a Host that is not this server's (host_not_allowed) or an Origin it does not allow (origin_not_allowed)"),
      405: err("no standalone SSE stream on this stateless server"),
      ...RATE_LIMITED,
    },
    errors: ["host_not_allowed", "origin_not_allowed", "method_not_allowed"],
    handler: ({ req }) => {
      if ((req.header("accept") ?? "").includes("text/event-stream")) {
        throw new TreasuryError(
          "method_not_allowed",
          "this MCP server is stateless: POST JSON-RPC to /api/mcp; there is no SSE stream",
          {},
          { Allow: "GET, POST" },
        );
      }
      return {
        status: 200,
        body: {
          name: MCP_SERVER_NAME,
          title: "Agent Treasury Gateway",
          version: deps.version,
          endpoint: ctx.links.url("/api/mcp"),
          status: "public_demo_online",
          transport: "streamable-http (stateless, JSON responses)",
          authentication:
            'treasury tools read `Authorization: Bearer <key>` from the HTTP request; without one, a priced tool (paid: true) is paid with x402 over MCP: its refusal carries the PaymentRequired in structuredContent, the payment goes in params._meta["x402/payment"], the settlement comes back in result._meta["x402/payment-response"]',
          tools: deps.tools().map((t) => ({
            name: t.name,
            title: t.title,
            description: t.description,
            inputSchema: z.toJSONSchema(z.object(t.inputSchema), { io: "input", unrepresentable: "any" }),
            annotations: t.annotations,
            authenticated: t.authenticated,
            ...(t.paid ? { paid: true, x402_route: `${t.paid.method} ${t.paid.path}` } : {}),
            rest_equivalent: restEquivalent(t),
          })),
        },
      };
    },
  });

  kit.route({
    method: "post",
    path: "/api/mcp",
    operationId: "postMcp",
    summary: "MCP endpoint (JSON-RPC 2.0 over Streamable HTTP, stateless; protocol revisions 2026-07-28 and 2025-11-25)",
    description:
      "MCP clients connect with the Streamable HTTP transport. A plain JSON-RPC 2.0 request (e.g. `tools/list`) with Content-Type: application/json also works. A body missing `jsonrpc` or `method` is a 400 typed error; a notification (no `id`) is 202 with no body.",
    tags: ["MCP"],
    request: { body: JsonRpcRequest, example: { jsonrpc: "2.0", id: 1, method: "tools/list" } },
    responses: {
      200: {
        description:
          "JSON-RPC response (a `result`, or a JSON-RPC `error` such as -32601 method not found); a request with `id: null` is answered with `id: null`",
        schema: JsonRpcResponse,
      },
      202: { description: "a notification (a message without `id`) was accepted; no body" },
      400: err(
        "missing jsonrpc or method; on 2026-07-28, a JSON-RPC error body instead: an unsupported protocol version (-32602 with the supported versions), Mcp-Method or Mcp-Name headers that do not match the body (-32020), a request without its _meta envelope",
      ),
      404: {
        description: "2026-07-28: a method this server does not implement (JSON-RPC -32601), the removed initialize and ping among them",
        schema: JsonRpcResponse,
      },
      403: err("DNS-rebinding guard: a Host that is not this server's (host_not_allowed) or an Origin it does not allow (origin_not_allowed)"),
      ...RATE_LIMITED,
    },
    errors: ["host_not_allowed", "origin_not_allowed"],
    handler: async ({ req, res }) => {
      await handleMcpPost(req, res, { ...deps, tools: deps.tools() });
      return { status: 200, body: undefined };
    },
  });
}
