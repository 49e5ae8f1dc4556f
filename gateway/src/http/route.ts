/**
 * Registering a route: one declaration (route-spec.ts) is checked, gives its price, bazaar entry, MCP
 * tool and OpenAPI operation (declaration/), and is served by its request stages in order
 * (stages/pipeline.ts: authenticate, the x402 stages, idempotency, handle).
 */
import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { RouteSink } from "./dispatcher";
import { checkDeclaration } from "./declaration/check";
import { registerDeclaration } from "./declaration/register";
import type { RouteHooks, RouteSpec } from "./route-spec";
import type { RouteTable } from "./route-table";
import { requestPipeline } from "./stages/pipeline";

export type { HandlerContext, HandlerResult, Method, PriceSpec, ResponseSpec, RouteHooks, RouteSpec, Security, ToolSpec } from "./route-spec";
export { IdempotencyKey } from "./route-spec";
export { RouteTable } from "./route-table";

export function registerRoute<B, Q, P>(
  router: RouteSink,
  registry: OpenAPIRegistry,
  table: RouteTable,
  spec: RouteSpec<B, Q, P>,
  hooks: RouteHooks = {},
): void {
  checkDeclaration(spec, hooks);
  registerDeclaration(registry, table, spec, hooks);
  const serve = requestPipeline(spec, hooks);
  // the pipeline's promise carries any failure to the error handler (no async wrapper of its own: a promise less per request)
  router[spec.method](spec.path, (req, res, next) => {
    serve(req, res).catch(next);
  });
}
