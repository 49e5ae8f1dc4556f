import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { RouteSink } from "../http/dispatcher";
import { registerRoute, type RouteHooks, type RouteSpec, type RouteTable } from "../http/route";
import { ErrorResponse } from "../schemas/common";

/** What a route module needs to declare its endpoints. */
export interface RouteKit {
  route<B, Q, P>(spec: RouteSpec<B, Q, P>): void;
}

export function createKit(router: RouteSink, registry: OpenAPIRegistry, table: RouteTable, hooks: RouteHooks = {}): RouteKit {
  return { route: (spec) => registerRoute(router, registry, table, spec, hooks) };
}

/** Typed error responses, described once. */
export const err = (description: string) => ({ description, schema: ErrorResponse });
export const RATE_LIMITED = { 429: { description: "rate limited (Retry-After says when to retry)", schema: ErrorResponse } };
