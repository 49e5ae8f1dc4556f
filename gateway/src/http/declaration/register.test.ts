/** What a declaration registers: price, tool, route table, OpenAPI operation (not for an internal route), bazaar entry. */
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import { describe, expect, it } from "vitest";
import { BazaarCatalog } from "../../x402/bazaar";
import { PriceList } from "../../x402/prices";
import { RouteTable } from "../route-table";
import { routeOf } from "../stages/harness.test-support";
import { registerDeclaration } from "./register";

describe("registerDeclaration", () => {
  it("enters a priced route's price, bazaar entry, tool, table row and operation", () => {
    const [registry, table, prices, catalog] = [new OpenAPIRegistry(), new RouteTable(), new PriceList(), new BazaarCatalog()];
    const spec = routeOf({
      method: "get",
      path: "/p",
      security: "bearer_or_x402",
      price: { atomic: 7n, description: "p" },
      tool: { name: "get_p", title: "P", description: "p" },
    });
    registerDeclaration(registry, table, spec, { prices, catalog });
    expect(prices.for("GET", "/p")).toEqual({ method: "GET", path: "/p", atomic: 7n, description: "p", tool: "get_p" });
    expect(catalog.extension("GET", "/p")).toBeDefined();
    expect(table.toolRoutes()).toEqual([spec]);
    expect(table.routeOf("get", "/p")).toBe(spec);
    expect(table.entries()).toEqual([["/p", ["GET", "HEAD"]]]);
    expect(registry.definitions.map((d) => d.type)).toEqual(["route"]);
  });

  it("an internal route is served and tabled, not published", () => {
    const [registry, table] = [new OpenAPIRegistry(), new RouteTable()];
    registerDeclaration(registry, table, routeOf({ internal: true }), {});
    expect(registry.definitions).toEqual([]);
    expect(table.entries()).toEqual([["/r", ["POST"]]]);
  });
});
