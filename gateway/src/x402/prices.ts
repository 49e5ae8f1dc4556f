/**
 * x402 prices: one configuration, served at GET /x402/prices.json and used by
 * the payment gate and the x402-express challenge, so they cannot disagree.
 * Amounts are atomic USDC (6 decimals). Every route has its own price: an
 * EIP-3009 authorization carries no route, so a distinct amount is what binds
 * a payment to the route and price it was made for.
 */
import { formatDecimal } from "../domain/money";
import { X402_NETWORK_V2 } from "./payment-match";

export interface RoutePrice {
  method: "GET" | "POST";
  /** express path of the route */
  path: string;
  atomic: bigint;
  description: string;
}

export const DEFAULT_PRICES: RoutePrice[] = [
  { method: "POST", path: "/api/v1/deposits", atomic: 50_000n, description: "Prepare or execute a deposit" },
  { method: "POST", path: "/api/v1/convert", atomic: 50_100n, description: "Prepare or execute a conversion to BTC or ETH" },
  { method: "POST", path: "/api/v1/borrow", atomic: 50_200n, description: "Prepare or execute a borrow" },
  { method: "POST", path: "/api/v1/repay", atomic: 50_300n, description: "Prepare or execute a repayment" },
  { method: "POST", path: "/api/v1/estimate", atomic: 10_000n, description: "Estimate the fee and LTV effect of an action" },
  { method: "GET", path: "/api/v1/health", atomic: 1_000n, description: "Treasury health score, LTV and zones" },
  { method: "GET", path: "/api/v1/treasury", atomic: 1_100n, description: "Treasury state" },
  { method: "GET", path: "/api/v1/policy-state", atomic: 1_200n, description: "Treasury policy state" },
  { method: "GET", path: "/api/v1/audit", atomic: 1_300n, description: "Treasury fee audit trail" },
];

export class PriceList {
  private readonly byRoute = new Map<string, RoutePrice>();

  constructor(readonly prices: RoutePrice[] = DEFAULT_PRICES) {
    const amounts = new Set<bigint>();
    for (const p of prices) {
      if (p.atomic <= 0n) throw new Error(`x402 price of ${p.method} ${p.path} must be positive`);
      if (amounts.has(p.atomic)) throw new Error(`x402 prices must be distinct per route (${p.atomic} is used twice)`);
      amounts.add(p.atomic);
      this.byRoute.set(`${p.method} ${p.path}`, p);
    }
  }

  for(method: string, path: string): RoutePrice | undefined {
    return this.byRoute.get(`${method.toUpperCase()} ${path}`);
  }

  document(network: string, asset: string, payTo: string) {
    return {
      object: "x402_price_list",
      /** the version the `network` field names; every route accepts both */
      x402_version: 1,
      x402_versions: [1, 2],
      scheme: "exact",
      network,
      networks: { "1": network, "2": X402_NETWORK_V2 },
      asset,
      asset_symbol: "USDC",
      decimals: 6,
      pay_to: payTo,
      note: "Amounts are atomic USDC (6 decimals). Each route has its own amount; a payment made for one route is refused by another. Pay with x402 version 1 (X-PAYMENT) or version 2 (PAYMENT-SIGNATURE).",
      prices: this.prices.map((p) => ({
        method: p.method,
        path: p.path,
        amount_atomic: p.atomic.toString(),
        amount_usdc: formatDecimal(p.atomic, 6),
        display: `$${formatDecimal(p.atomic, 6)}`,
        description: p.description,
      })),
    };
  }
}
