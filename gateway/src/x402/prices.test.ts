/** The x402 price list: one amount per route, atomic units, the document served at /x402/prices.json. */
import { describe, expect, it } from "vitest";
import { meteredAmount, PriceList, type Meter } from "./prices";

describe("PriceList", () => {
  const list = () =>
    new PriceList([
      { method: "POST", path: "/api/v1/deposits", atomic: 50_000n, description: "Deposit", tool: "prepare_deposit" },
      { method: "GET", path: "/api/v1/treasury", atomic: 1_100n, description: "Treasury" },
    ]);

  it("finds a route's price by method (any case) and path", () => {
    expect(list().for("POST", "/api/v1/deposits")?.atomic).toBe(50_000n);
    expect(list().for("get", "/api/v1/treasury")?.atomic).toBe(1_100n);
    expect(list().for("GET", "/api/v1/deposits")).toBeUndefined();
    expect(list().for("POST", "/api/v1/nothing")).toBeUndefined();
  });

  it("is filled one route at a time, in the order the routes are declared", () => {
    const l = new PriceList();
    expect(l.prices).toEqual([]);
    l.add({ method: "GET", path: "/b", atomic: 2n, description: "" });
    l.add({ method: "GET", path: "/a", atomic: 1n, description: "" });
    expect(l.prices.map((p) => p.path)).toEqual(["/b", "/a"]);
    expect(() => l.add({ method: "GET", path: "/a", atomic: 3n, description: "" })).toThrow("x402 price of GET /a is declared twice");
    expect(l.for("GET", "/a")?.atomic).toBe(1n);
  });

  it("refuses a zero or negative price, and two routes of one price", () => {
    expect(() => new PriceList([{ method: "GET", path: "/a", atomic: 0n, description: "" }])).toThrow("x402 price of GET /a must be positive");
    expect(() => new PriceList([{ method: "GET", path: "/a", atomic: -1n, description: "" }])).toThrow(/must be positive/);
    expect(
      () =>
        new PriceList([
          { method: "GET", path: "/a", atomic: 5n, description: "" },
          { method: "GET", path: "/b", atomic: 5n, description: "" },
        ]),
    ).toThrow("x402 prices must be distinct per route (5 is used twice)");
    expect(new PriceList([{ method: "GET", path: "/a", atomic: 1n, description: "" }]).prices).toHaveLength(1);
    // the same amount on the same route in another method is another route
    expect(
      () =>
        new PriceList([
          { method: "GET", path: "/a", atomic: 5n, description: "" },
          { method: "POST", path: "/a", atomic: 5n, description: "" },
        ]),
    ).toThrow(/distinct per route/);
  });

  it("documents every price in atomic units and as USDC", () => {
    const doc = new PriceList([{ method: "GET", path: "/api/v1/health", atomic: 1_000n, description: "Health" }]).document(
      "base-sepolia",
      "0xAsset",
      "0xPayTo",
    );
    expect(doc).toEqual({
      object: "x402_price_list",
      x402_version: 1,
      x402_versions: [1, 2],
      scheme: "exact",
      network: "base-sepolia",
      networks: { "1": "base-sepolia", "2": "eip155:84532" },
      asset: "0xAsset",
      asset_symbol: "USDC",
      decimals: 6,
      pay_to: "0xPayTo",
      note: "Amounts are atomic USDC (6 decimals). Each route has its own amount; a payment made for one route is refused by another. Pay with x402 version 1 (X-PAYMENT) or version 2 (PAYMENT-SIGNATURE).",
      prices: [{ method: "GET", path: "/api/v1/health", amount_atomic: "1000", amount_usdc: "0.001", display: "$0.001", description: "Health" }],
    });
    expect(
      list()
        .document("n", "a", "p")
        .prices.map((p) => p.tool),
    ).toEqual(["prepare_deposit", undefined]);
  });
});

describe("a metered route (x402 upto)", () => {
  const meter: Meter = { baseAtomic: 300n, unitAtomic: 2n, unit: "entry", units: (a) => (a as { data: unknown[] }).data.length };
  const page = (n: number) => ({ data: Array.from({ length: n }, () => ({})) });

  it("charges its base plus a price per unit of the answer, never above the route's price", () => {
    const price = { atomic: 1_300n, meter };
    expect(meteredAmount(price, page(0))).toBe(300n);
    expect(meteredAmount(price, page(1))).toBe(302n);
    expect(meteredAmount(price, page(499))).toBe(1_298n);
    expect(meteredAmount(price, page(500))).toBe(1_300n);
    expect(meteredAmount(price, page(501))).toBe(1_300n);
    // units counted whole and never negative
    expect(meteredAmount({ atomic: 1_300n, meter: { ...meter, units: () => 2.9 } }, {})).toBe(304n);
    expect(meteredAmount({ atomic: 1_300n, meter: { ...meter, units: () => -5 } }, {})).toBe(300n);
    // a route without a meter costs its price
    expect(meteredAmount({ atomic: 1_300n }, page(3))).toBe(1_300n);
  });

  it("is refused unless its base is positive and no greater than the route's price, and its unit price not negative", () => {
    const at =
      (m: Partial<Meter>, atomic = 1_300n) =>
      () =>
        new PriceList([{ method: "GET", path: "/m", atomic, description: "", meter: { ...meter, ...m } }]);
    expect(at({})).not.toThrow();
    expect(at({ baseAtomic: 1_300n })).not.toThrow();
    expect(at({ unitAtomic: 0n })).not.toThrow();
    expect(at({ baseAtomic: 0n })).toThrow("x402 meter of GET /m must charge a positive base no greater than the route's price");
    expect(at({ baseAtomic: 1_301n })).toThrow(/positive base no greater/);
    expect(at({ unitAtomic: -1n })).toThrow(/positive base no greater/);
  });

  it("is stated in the price list, beside the maximum", () => {
    const list = new PriceList([{ method: "GET", path: "/m", atomic: 1_300n, description: "d", meter }]);
    expect(list.document("base-sepolia", "0xa", "0xb").prices[0]).toMatchObject({
      amount_atomic: "1300",
      metered: { scheme: "upto", max_atomic: "1300", base_atomic: "300", per_unit_atomic: "2", unit: "entry" },
    });
    expect(
      new PriceList([{ method: "GET", path: "/n", atomic: 1_000n, description: "d" }]).document("base-sepolia", "0xa", "0xb").prices[0],
    ).not.toHaveProperty("metered");
  });

  it("lists the schemes each route takes, as the gate's registry offers them (none when not asked)", () => {
    const list = new PriceList([
      { method: "GET", path: "/m", atomic: 1_300n, description: "d", meter },
      { method: "GET", path: "/n", atomic: 1_000n, description: "d" },
    ]);
    const doc = list.document("base-sepolia", "0xa", "0xb", (p) => (p.meter ? ["exact", "upto"] : ["exact"]));
    expect(doc.prices.map((p) => [p.path, p.schemes])).toEqual([
      ["/m", ["exact", "upto"]],
      ["/n", ["exact"]],
    ]);
    expect(list.document("base-sepolia", "0xa", "0xb").prices[0]).not.toHaveProperty("schemes");
  });
});
