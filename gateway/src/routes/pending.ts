/**
 * Endpoints of the spec's summary table whose behaviour later issues build
 * (authenticated actions, reads, relay, MCP). They are declared here so the
 * OpenAPI document lists every path; until built they answer 501 with a typed
 * error instead of pretending to work.
 */
import { ApiError } from "../http/errors";
import type { RouteSpec } from "../http/route";
import { BorrowRequest, ConvertRequest, DepositRequest, EstimateRequest, RelayRequest, RepayRequest } from "../schemas/actions";
import { JsonRpcRequest } from "../schemas/discovery";
import { err, type RouteKit } from "./kit";

const notYet = (what: string) => () => {
  throw new ApiError(501, "not_implemented", `${what} is not available in this build yet`);
};

type Pending = Omit<RouteSpec<any, any, any>, "handler" | "responses"> & { what: string };

export const PENDING_ROUTES: Pending[] = [
  { method: "post", path: "/api/v1/deposits", operationId: "createDeposit", summary: "Deposit USDC", tags: ["Actions"], security: "bearer_or_x402", idempotencyKey: true, request: { body: DepositRequest }, what: "deposits" },
  { method: "post", path: "/api/v1/convert", operationId: "createConversion", summary: "Convert USDC into BTC or ETH exposure", tags: ["Actions"], security: "bearer_or_x402", idempotencyKey: true, request: { body: ConvertRequest }, what: "convert" },
  { method: "post", path: "/api/v1/borrow", operationId: "createBorrow", summary: "Borrow USDC against BTC/ETH collateral", tags: ["Actions"], security: "bearer_or_x402", idempotencyKey: true, request: { body: BorrowRequest }, what: "borrow" },
  { method: "post", path: "/api/v1/repay", operationId: "createRepayment", summary: "Repay USDC debt", tags: ["Actions"], security: "bearer_or_x402", idempotencyKey: true, request: { body: RepayRequest }, what: "repay" },
  { method: "post", path: "/api/v1/estimate", operationId: "estimateAction", summary: "Estimate fee and LTV of an action", tags: ["Actions"], security: "bearer_or_x402", request: { body: EstimateRequest }, what: "estimate" },
  { method: "get", path: "/api/v1/health", operationId: "getHealth", summary: "Health state of the authenticated treasury", tags: ["Reads"], security: "bearer_or_x402", what: "health" },
  { method: "get", path: "/api/v1/treasury", operationId: "getTreasuryState", summary: "State of the authenticated treasury", tags: ["Reads"], security: "bearer_or_x402", what: "treasury state" },
  { method: "get", path: "/api/v1/policy-state", operationId: "getPolicyState", summary: "Policy state of the authenticated treasury", tags: ["Reads"], security: "bearer_or_x402", what: "policy state" },
  { method: "post", path: "/api/v1/relay", operationId: "relayTransaction", summary: "Relay a signed transaction", tags: ["Wallet loop"], idempotencyKey: true, request: { body: RelayRequest }, what: "relay" },
  { method: "get", path: "/api/mcp", operationId: "getMcpDiscovery", summary: "MCP server metadata and tool list", tags: ["MCP"], what: "MCP discovery" },
  { method: "post", path: "/api/mcp", operationId: "postMcp", summary: "MCP JSON-RPC 2.0 endpoint", tags: ["MCP"], request: { body: JsonRpcRequest }, what: "MCP" },
];

export function pendingRoutes(kit: RouteKit, built: Set<string>): void {
  for (const p of PENDING_ROUTES) {
    if (built.has(`${p.method} ${p.path}`)) continue;
    const { what, ...spec } = p;
    kit.route({
      ...spec,
      responses: { 400: err("invalid request"), 501: err("not built yet") },
      handler: notYet(what),
    });
  }
}
