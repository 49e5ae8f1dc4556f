/**
 * The 402 of a priced route without a credential, as data (the HTTP stage writes it): x402 version 1's
 * challenge body as x402-express writes it (`X-PAYMENT header is required`, the route's `exact` requirements
 * with our resource, the configured URL), with the typed-error fields alongside, and v2's PAYMENT-REQUIRED
 * header carrying every scheme's offers and the route's extensions (payment-identifier, bazaar, and what the
 * route offers beside the price: sign-in-with-x). A browser is shown x402's paywall page with the same
 * requirements (`paywall`).
 */
import { getPaywallHtml } from "x402/paywall";
import { PAYMENT_HEADERS, toHeaderJson as headerJson, X402_NETWORK } from "./payment-match";
import { formatDecimal } from "@treasury/core/domain/money";
import { wwwAuthenticate, type PaymentAnswer, type RouteRequirements } from "./route-requirements";
import type { PricedRoute } from "./schemes/scheme";

export const CHALLENGE_MESSAGE =
  "payment required: pay per request with x402 (version 1: an X-PAYMENT header for one of `accepts`; version 2: a PAYMENT-SIGNATURE header for the PAYMENT-REQUIRED header's requirements), or send Authorization: Bearer <API key>";

/** the challenge of a route, and (`paywall`) the page x402 shows a browser instead of its body */
export type Challenge = (route: PricedRoute, extensions?: Record<string, unknown>) => PaymentAnswer & { paywall(currentUrl: string): string };

export function challenger(requirements: RouteRequirements): Challenge {
  return (route, extensions = {}) => {
    const price = requirements.priceOf(route);
    const accepts = [requirements.v1(route.path, price)];
    const required = requirements.paymentRequired(route.path, price, "payment_required");
    return {
      status: 402,
      headers: {
        "WWW-Authenticate": wwwAuthenticate(),
        [PAYMENT_HEADERS[2].required]: headerJson({ ...required, extensions: { ...required.extensions, ...extensions } }),
      },
      body: {
        x402Version: 1,
        error: "X-PAYMENT header is required",
        accepts,
        message: CHALLENGE_MESSAGE,
        ...(Object.keys(extensions).length > 0 ? { extensions } : {}),
      },
      paywall: (currentUrl) =>
        getPaywallHtml({ amount: Number(formatDecimal(price.atomic, 6)), paymentRequirements: accepts, currentUrl, testnet: X402_NETWORK === "base-sepolia" }),
    };
  };
}
