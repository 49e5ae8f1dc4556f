import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { RouteSink } from "../http/dispatcher";
import { registerRoute, type RouteHooks, type RouteSpec, type RouteTable } from "../http/route";
import { ErrorResponse } from "@treasury/core/schemas/common";

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

/**
 * What every route that takes a bearer key may answer beside its own: 401 for a missing or invalid key, and
 * for a console session whose owner is no longer an owner of the Safe (owner_removed: the key is revoked);
 * 503 when a console session's owner must be confirmed on chain and the Safe's chain does not answer.
 * `unavailable`: the route's own reasons for a 503.
 */
export const bearerRefusals = (unavailable?: string) => ({
  401: err("missing or invalid credential (unauthorized), or a console session revoked because its owner is no longer an owner of the Safe (owner_removed)"),
  503: err([unavailable, "a console session's owner could not be confirmed on the Safe's chain (chain_unavailable)"].filter(Boolean).join("; or ")),
});
