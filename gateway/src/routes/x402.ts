/** GET /x402/prices.json: the price list the payment gate charges. */
import { z } from "@treasury/core/schemas/zod";
import type { BazaarCatalog } from "../x402/bazaar";
import type { PaymentGate } from "../x402/payment-gate";
import type { PriceList } from "../x402/prices";
import { RATE_LIMITED, type RouteKit } from "./kit";

export const PriceListDocument = z
  .object({
    object: z.literal("x402_price_list"),
    x402_version: z.literal(1).openapi({ description: "the version `network` is named in" }),
    x402_versions: z.array(z.union([z.literal(1), z.literal(2)])).openapi({ description: "every route accepts a proof of each of these versions" }),
    network: z.string(),
    networks: z.object({ "1": z.literal("base-sepolia"), "2": z.literal("eip155:84532") }).openapi({ description: "the network per version (v2: CAIP-2)" }),
    asset: z.string(),
    pay_to: z.string(),
    prices: z.array(
      z.object({
        method: z.string(),
        path: z.string(),
        amount_atomic: z.string(),
        amount_usdc: z.string(),
        display: z.string(),
        description: z.string(),
        tool: z.string().optional().openapi({ description: "the MCP tool this route serves (its name finds the capability's path)" }),
        schemes: z.array(z.string()).optional().openapi({ description: "the x402 schemes this route takes (each scheme's offer in its 402's `accepts`)" }),
        metered: z
          .object({ scheme: z.literal("upto"), max_atomic: z.string(), base_atomic: z.string(), per_unit_atomic: z.string(), unit: z.string() })
          .optional()
          .openapi({
            description:
              "a metered route: with x402 `upto` the payer signs `max_atomic` and is charged base + per unit of the answer (at most the maximum); `exact` pays the maximum",
          }),
      }),
    ),
  })
  .passthrough()
  .openapi("X402PriceList");

export const DiscoveryResources = z
  .object({
    x402Version: z.literal(2),
    items: z.array(
      z
        .object({
          resource: z.string(),
          type: z.literal("http"),
          x402Version: z.literal(2),
          accepts: z.array(
            z
              .object({
                scheme: z.string().openapi({ description: "the x402 scheme: exact, batch-settlement, upto, or any other the gateway takes" }),
                network: z.string(),
                amount: z.string(),
                asset: z.string(),
                payTo: z.string(),
              })
              .passthrough(),
          ),
          lastUpdated: z.string(),
          metadata: z.object({ method: z.string(), description: z.string(), bazaar: z.record(z.string(), z.unknown()) }).passthrough(),
        })
        .passthrough(),
    ),
    pagination: z.object({ limit: z.number().int(), offset: z.number().int(), total: z.number().int() }),
  })
  .openapi("X402DiscoveryResources");

export function x402Routes(
  kit: RouteKit,
  prices: PriceList,
  catalog: BazaarCatalog,
  payments: PaymentGate,
  info: { network: string; asset: string; payTo: string },
): void {
  const listedAt = new Date().toISOString();
  kit.route({
    method: "get",
    path: "/x402/discovery/resources",
    operationId: "listX402Resources",
    summary: "Every priced route as a catalogue lists it (x402 bazaar: what it costs, what to send, what comes back)",
    description:
      "In the shape of an x402 facilitator's discovery list (`/discovery/resources`): each priced route with its version 2 requirements and its bazaar metadata, the same the route's 402 carries in `extensions.bazaar`, made from the schemas of this document.",
    tags: ["Discovery"],
    extension: true,
    responses: { 200: { description: "the priced routes", schema: DiscoveryResources }, ...RATE_LIMITED },
    handler: () => {
      const items = prices.prices.map((p) => {
        const required = payments.paymentRequired(p);
        return {
          resource: required.resource.url,
          type: "http" as const,
          x402Version: 2 as const,
          accepts: required.accepts,
          lastUpdated: listedAt,
          metadata: { method: p.method, description: p.description, bazaar: catalog.extension(p.method, p.path, { withOutput: true }) ?? {} },
        };
      });
      return { status: 200, body: { x402Version: 2, items, pagination: { limit: items.length, offset: 0, total: items.length } } };
    },
  });
  kit.route({
    method: "get",
    path: "/x402/prices.json",
    operationId: "getX402Prices",
    summary: "x402 price per route (atomic USDC and the human figure)",
    tags: ["Discovery"],
    responses: { 200: { description: "price list", schema: PriceListDocument }, ...RATE_LIMITED },
    handler: () => ({
      status: 200,
      body: prices.document(info.network, info.asset, info.payTo, (p) => payments.paymentRequired(p).accepts.map((a) => a.scheme)),
    }),
  });
}
