/** The x402 price list: one amount per route, atomic units, the document served at /x402/prices.json. */
import { describe, expect, it } from "vitest";
import { DEFAULT_PRICES, PriceList } from "./prices";

describe("PriceList", () => {
  it("finds a route's price by method (any case) and path", () => {
    const list = new PriceList();
    expect(list.for("POST", "/api/v1/deposits")?.atomic).toBe(50_000n);
    expect(list.for("get", "/api/v1/treasury")?.atomic).toBe(1_100n);
    expect(list.for("GET", "/api/v1/deposits")).toBeUndefined();
    expect(list.for("POST", "/api/v1/nothing")).toBeUndefined();
  });

  it("every default route has its own positive amount (the amount binds a proof to its route)", () => {
    const amounts = DEFAULT_PRICES.map((p) => p.atomic);
    expect(new Set(amounts).size).toBe(amounts.length);
    expect(amounts.every((a) => a > 0n)).toBe(true);
    expect(DEFAULT_PRICES.map((p) => `${p.method} ${p.path} ${p.atomic}`)).toEqual([
      "POST /api/v1/deposits 50000",
      "POST /api/v1/convert 50100",
      "POST /api/v1/borrow 50200",
      "POST /api/v1/repay 50300",
      "POST /api/v1/estimate 10000",
      "GET /api/v1/health 1000",
      "GET /api/v1/treasury 1100",
      "GET /api/v1/policy-state 1200",
      "GET /api/v1/audit 1300",
    ]);
  });

  it("refuses a zero or negative price, and two routes of one price", () => {
    expect(() => new PriceList([{ method: "GET", path: "/a", atomic: 0n, description: "" }])).toThrow("x402 price of GET /a must be positive");
    expect(() => new PriceList([{ method: "GET", path: "/a", atomic: -1n, description: "" }])).toThrow(/must be positive/);
    expect(() => new PriceList([{ method: "GET", path: "/a", atomic: 5n, description: "" }, { method: "GET", path: "/b", atomic: 5n, description: "" }])).toThrow("x402 prices must be distinct per route (5 is used twice)");
    expect(new PriceList([{ method: "GET", path: "/a", atomic: 1n, description: "" }]).prices).toHaveLength(1);
  });

  it("documents every price in atomic units and as USDC", () => {
    const doc = new PriceList([{ method: "GET", path: "/api/v1/health", atomic: 1_000n, description: "Health" }]).document("base-sepolia", "0xAsset", "0xPayTo");
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
  });
});
