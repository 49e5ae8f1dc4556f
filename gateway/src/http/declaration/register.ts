/**
 * What a route's declaration registers beside its handler: its x402 price (the price list, the 402's
 * requirements) and bazaar entry, its MCP tool, its place in the route table (405s, the tool's REST
 * twin) and its OpenAPI operation.
 */
import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import type { RouteTable } from "../route-table";
import { openApiOperation } from "./openapi-operation";

export function registerDeclaration(registry: OpenAPIRegistry, table: RouteTable, spec: AnyRouteSpec, hooks: RouteHooks): void {
  const method = spec.method.toUpperCase() as "GET" | "POST"; // a priced route is a GET or a POST (http/declaration/check.ts)
  if (spec.price) hooks.prices?.add({ method, path: spec.path, ...spec.price, ...(spec.tool ? { tool: spec.tool.name } : {}) });
  if (spec.tool) table.addTool(spec);
  table.add(spec.path, spec.method);
  table.declare(spec);
  if (!spec.internal) registry.registerPath(openApiOperation(spec));
  if (spec.security === "bearer_or_x402" && hooks.catalog) {
    hooks.catalog.add({
      method,
      path: spec.path,
      body: spec.request?.body,
      query: spec.request?.query,
      outputs: Object.entries(spec.responses).flatMap(([status, r]) => (/^2\d\d$/.test(status) && r.schema ? [r.schema] : [])),
      example: spec.request?.example,
    });
  }
}
