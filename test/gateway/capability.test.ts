/**
 * A priced capability is one declaration: registering it on a kit is all it takes for the route, its
 * OpenAPI operation, its x402 price, its bazaar entry and its MCP tool (paid like the route) to exist.
 * And a declaration that contradicts itself is refused at registration.
 */
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import express from "express";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../../gateway/src/http/openapi";
import { RouteTable, type RouteSpec } from "../../gateway/src/http/route";
import { toolsOf } from "../../gateway/src/mcp/tools";
import { createKit, err, RATE_LIMITED } from "../../gateway/src/routes/kit";
import { z } from "@treasury/core/schemas/zod";
import { BazaarCatalog } from "../../gateway/src/x402/bazaar";
import type { IdempotencyStore } from "../../gateway/src/store/idempotency-store";
import { PriceList } from "../../gateway/src/x402/prices";

const Positions = z.object({ object: z.literal("positions"), count: z.number().int() }).openapi("PositionsExample");
const PositionsQuery = z.object({ min_usdc: z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().max(1000)).optional() });

function harness() {
  const registry = new OpenAPIRegistry();
  const table = new RouteTable();
  const prices = new PriceList();
  const catalog = new BazaarCatalog();
  // the idempotency store is only checked for presence at registration (nothing is called here)
  const kit = createKit(express.Router(), registry, table, { authenticate: () => undefined, prices, catalog, idempotency: {} as IdempotencyStore });
  return { registry, table, prices, catalog, kit, tools: () => toolsOf(table.toolRoutes(), (m, p) => table.routeOf(m, p)) };
}

const positions: RouteSpec<unknown, unknown, unknown> = {
  method: "get",
  path: "/api/v1/positions",
  operationId: "getPositions",
  summary: "Aave positions of the authenticated treasury",
  tags: ["Reads"],
  security: "bearer_or_x402",
  request: { query: PositionsQuery },
  price: { atomic: 1_400n, description: "Treasury positions" },
  tool: { name: "get_positions", title: "Positions", description: "Aave positions of the authenticated treasury, one entry per reserve." },
  responses: { 200: { description: "positions", schema: Positions }, 401: err("missing or invalid credential"), ...RATE_LIMITED },
  handler: () => ({ status: 200, body: { object: "positions", count: 0 } }),
};

describe("one declaration per capability", () => {
  it("makes the route's price, bazaar entry, OpenAPI operation and paid MCP tool", () => {
    const h = harness();
    h.kit.route(positions);
    expect(h.prices.for("GET", "/api/v1/positions")).toEqual({
      method: "GET",
      path: "/api/v1/positions",
      atomic: 1_400n,
      description: "Treasury positions",
      tool: "get_positions",
    });
    expect(h.catalog.extension("GET", "/api/v1/positions")?.info).toEqual({
      input: { type: "http", method: "GET", queryParams: {} },
      output: { type: "json" },
    });
    const doc = buildOpenApiDocument(h.registry, "http://localhost") as any;
    const op = doc.paths["/api/v1/positions"].get;
    expect(op.operationId).toBe("getPositions");
    expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "402", "409", "429", "503"]);
    expect(op.security).toEqual([{ bearerAuth: [] }, { x402Payment: [] }, { x402PaymentV2: [] }]);
    const [tool] = h.tools();
    expect(tool).toMatchObject({
      name: "get_positions",
      authenticated: true,
      twin: { method: "GET", path: "/api/v1/positions", idempotencyKey: false },
      paid: { method: "GET", path: "/api/v1/positions" },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    });
    // the query's text is parsed into a number: the tool takes the number, with the same bound
    expect(z.object(tool!.inputSchema).safeParse({ min_usdc: 5 }).success).toBe(true);
    expect(z.object(tool!.inputSchema).safeParse({ min_usdc: 5000 }).success).toBe(false);
    expect(Object.keys(tool!.outputSchema!.shape)).toEqual(expect.arrayContaining(["object", "count", "error", "http_status", "accepts"]));
  });

  it("a state-changing route's tool takes its body and an idempotency_key, and is not read-only", () => {
    const h = harness();
    const Body = z.object({ amount_usdc: z.number().positive() });
    h.kit.route({
      ...positions,
      method: "post",
      path: "/api/v1/rebalance",
      operationId: "rebalance",
      idempotencyKey: true,
      request: { body: Body },
      price: { atomic: 7n, description: "x" },
      tool: { name: "rebalance", title: "Rebalance", description: "Rebalance the treasury towards its preset." },
    } as RouteSpec<any, any, any>);
    const [tool] = h.tools();
    expect(Object.keys(tool!.inputSchema).sort()).toEqual(["amount_usdc", "idempotency_key"]);
    expect(tool!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(z.object(tool!.inputSchema).safeParse({ amount_usdc: 1, idempotency_key: "short" }).success).toBe(false);
  });

  it("a path parameter is a tool argument, and may not share its name with a body or query field", () => {
    const h = harness();
    const Params = z.object({ id: z.string().regex(/^pos_\d+$/) });
    h.kit.route({ ...positions, path: "/api/v1/positions/:id", request: { params: Params, query: PositionsQuery } } as RouteSpec<any, any, any>);
    const [tool] = h.tools();
    expect(Object.keys(tool!.inputSchema).sort()).toEqual(["id", "min_usdc"]);
    expect(z.object(tool!.inputSchema).safeParse({ id: "pos_1" }).success).toBe(true);
    expect(z.object(tool!.inputSchema).safeParse({ id: "x" }).success).toBe(false);
    const clash = harness();
    clash.kit.route({
      ...positions,
      path: "/api/v1/positions/:min_usdc",
      price: { atomic: 2n, description: "c" },
      request: { params: z.object({ min_usdc: z.string() }), query: PositionsQuery },
    } as RouteSpec<any, any, any>);
    expect(() => clash.tools()).toThrow("the MCP tool's argument min_usdc is both a path parameter and a query field");
  });

  it("refuses a declaration that contradicts itself", () => {
    const h = harness();
    expect(() => h.kit.route({ ...positions, price: undefined })).toThrow("GET /api/v1/positions accepts x402 but declares no price");
    expect(() => h.kit.route({ ...positions, path: "/a", security: "bearer" })).toThrow("GET /a declares a price but does not accept x402");
    h.kit.route(positions);
    expect(() => h.kit.route({ ...positions, path: "/b" })).toThrow(/distinct per route/);
    expect(() => h.kit.route({ ...positions, path: "/c", price: { atomic: 9n, description: "c" } })).toThrow("MCP tool get_positions is declared twice");
    h.kit.route({ ...positions, path: "/d", price: { atomic: 10n, description: "d" }, tool: { ...positions.tool!, name: "d", withKey: "/nowhere" } });
    expect(() => h.tools()).toThrow("MCP tool d: no GET /nowhere route");
  });
});
