/** GET /x402/prices.json: the price list the payment gate charges. */
import { z } from "../schemas/zod";
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
    prices: z.array(z.object({ method: z.string(), path: z.string(), amount_atomic: z.string(), amount_usdc: z.string(), display: z.string(), description: z.string() })),
  })
  .passthrough()
  .openapi("X402PriceList");

export function x402Routes(kit: RouteKit, prices: PriceList, info: { network: string; asset: string; payTo: string }): void {
  kit.route({
    method: "get",
    path: "/x402/prices.json",
    operationId: "getX402Prices",
    summary: "x402 price per route (atomic USDC and the human figure)",
    tags: ["Discovery"],
    responses: { 200: { description: "price list", schema: PriceListDocument }, ...RATE_LIMITED },
    handler: () => ({ status: 200, body: prices.document(info.network, info.asset, info.payTo) }),
  });
}
