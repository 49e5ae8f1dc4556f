/**
 * x402 prices: declared on each priced route, collected here, served at GET
 * /x402/prices.json and used by the payment gate and the x402-express
 * challenge, so they cannot disagree.
 * Amounts are atomic USDC (6 decimals). Every route has its own price: an
 * EIP-3009 authorization carries no route, so a distinct amount is what binds
 * a payment to the route and price it was made for.
 */
import { formatDecimal } from "@treasury/core/domain/money";
import { X402_NETWORK_V2 } from "./payment-match";

export interface RoutePrice {
  method: "GET" | "POST";
  /** express path of the route */
  path: string;
  atomic: bigint;
  description: string;
  /** the MCP tool that is served by this route, if any (agents find a capability's path by it) */
  tool?: string;
  /** a metered route: `atomic` is the most a call costs; what it used is charged with x402's `upto` (meteredAmount) */
  meter?: Meter;
}

/** what a call of a metered route costs: a base, plus a price per unit of its answer (entries returned, say), at most the route's price */
export interface Meter {
  baseAtomic: bigint;
  unitAtomic: bigint;
  /** what one unit is, for the price list (`entry`) */
  unit: string;
  /** how many units an answer's body holds */
  units(answer: unknown): number;
}

/** what a call of a metered route used, by its answer: base + unit x units, never above the route's price */
export function meteredAmount(price: Pick<RoutePrice, "atomic" | "meter">, answer: unknown): bigint {
  if (!price.meter) return price.atomic;
  const used = price.meter.baseAtomic + price.meter.unitAtomic * BigInt(Math.max(0, Math.floor(price.meter.units(answer))));
  return used < price.atomic ? used : price.atomic;
}

/**
 * The price list, filled as the priced routes are registered (each route
 * declares its own price beside its schemas: http/route.ts), read by the
 * payment gate, the bazaar catalogue and /x402/prices.json.
 */
export class PriceList {
  private readonly byRoute = new Map<string, RoutePrice>();
  private readonly amounts = new Map<bigint, string>();

  constructor(prices: RoutePrice[] = []) {
    for (const p of prices) this.add(p);
  }

  /** a route's price: positive, and distinct from every other route's (the amount binds a proof to its route) */
  add(p: RoutePrice): void {
    const route = `${p.method} ${p.path}`;
    if (p.atomic <= 0n) throw new Error(`x402 price of ${route} must be positive`);
    if (p.meter && (p.meter.baseAtomic <= 0n || p.meter.unitAtomic < 0n || p.meter.baseAtomic > p.atomic))
      throw new Error(`x402 meter of ${route} must charge a positive base no greater than the route's price`);
    const other = this.amounts.get(p.atomic);
    if (other !== undefined && other !== route) throw new Error(`x402 prices must be distinct per route (${p.atomic} is used twice)`);
    if (this.byRoute.has(route)) throw new Error(`x402 price of ${route} is declared twice`);
    this.amounts.set(p.atomic, route);
    this.byRoute.set(route, p);
  }

  get prices(): RoutePrice[] {
    return [...this.byRoute.values()];
  }

  for(method: string, path: string): RoutePrice | undefined {
    return this.byRoute.get(`${method.toUpperCase()} ${path}`);
  }

  /** `schemesOf`: the x402 schemes a route takes (the gate's registry, each scheme's offers), listed per route */
  document(network: string, asset: string, payTo: string, schemesOf?: (p: RoutePrice) => string[]) {
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
        ...(p.tool ? { tool: p.tool } : {}),
        ...(schemesOf ? { schemes: schemesOf(p) } : {}),
        ...(p.meter
          ? {
              metered: {
                scheme: "upto",
                max_atomic: p.atomic.toString(),
                base_atomic: p.meter.baseAtomic.toString(),
                per_unit_atomic: p.meter.unitAtomic.toString(),
                unit: p.meter.unit,
              },
            }
          : {}),
      })),
    };
  }
}
