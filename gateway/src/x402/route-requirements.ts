/**
 * A priced route's payment requirements, as each x402 version states them: v1's (x402-express's shape,
 * the 402's `accepts`), v2's (CAIP-2 network, `amount`; the PAYMENT-REQUIRED header), and the 402 that
 * offers both (each scheme of the registry adding its own offers). The resource is the configured public URL,
 * never the Host header. A refusal is data (status, headers, body): the HTTP stage writes it.
 */
import { getAddress } from "viem";
import type { PaymentRequirements } from "x402/types";
import { BAZAAR } from "./bazaar";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import {
  PAYMENT_HEADERS,
  PAYMENT_IDENTIFIER,
  paymentIdentifierDeclaration,
  toHeaderJson as headerJson,
  X402_NETWORK,
  X402_NETWORK_V2,
  type RequirementsV2,
} from "./payment-match";
import type { RoutePrice } from "./prices";
import type { AnyScheme, Refusal, SchemeEnv } from "./schemes/scheme";

export function wwwAuthenticate(): string {
  return `Bearer realm="treasury", X402 realm="treasury" scheme="exact" network="${X402_NETWORK}" header="${PAYMENT_HEADERS[1].payment}", X402 realm="treasury" scheme="exact" network="${X402_NETWORK_V2}" header="${PAYMENT_HEADERS[2].payment}"`;
}

const withBazaar = (ext: unknown) => (ext ? { [BAZAAR]: ext } : {});

/** a 402 as data: the HTTP layer writes its status, its headers and its body (adding the request's id) */
export interface PaymentAnswer {
  status: 402;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export type RouteRequirements = ReturnType<typeof routeRequirements>;

export function routeRequirements(
  ctx: Pick<PaymentGateContext, "config" | "links">,
  opts: PaymentGateOptions,
  schemes: readonly AnyScheme[],
  env: () => SchemeEnv,
) {
  const cfg = ctx.config.x402;
  const payTo = getAddress(cfg.payTo);

  const priceOf = (route: { method: string; path: string }): RoutePrice => {
    const price = opts.prices.for(route.method, route.path);
    if (!price) throw new Error(`no x402 price for ${route.method} ${route.path}`);
    return price;
  };

  /** the same requirements x402-express puts in the challenge */
  const v1 = (path: string, p: RoutePrice): PaymentRequirements => ({
    scheme: "exact",
    network: X402_NETWORK,
    maxAmountRequired: p.atomic.toString(),
    resource: ctx.links.url(path) as `${string}://${string}`,
    description: p.description,
    mimeType: "application/json",
    payTo,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    asset: getAddress(opts.asset.address),
    outputSchema: { input: { type: "http", method: p.method, discoverable: true } },
    extra: { name: opts.asset.name, version: opts.asset.version },
  });

  /** the same requirements in x402 version 2's shape (CAIP-2 network, `amount`) */
  const v2 = (p: RoutePrice): RequirementsV2 => ({
    scheme: "exact",
    network: X402_NETWORK_V2,
    amount: p.atomic.toString(),
    asset: getAddress(opts.asset.address),
    payTo,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    extra: { name: opts.asset.name, version: opts.asset.version },
  });

  /**
   * x402 version 2's PaymentRequired for this route: the PAYMENT-REQUIRED header of every 402 (and a paid MCP
   * tool's refusal); `accepts` is every scheme's offers, `refusing` the scheme whose corrective state rides in its own
   */
  const paymentRequired = (path: string, p: RoutePrice, error: string, refusing?: { scheme: AnyScheme; state?: Record<string, unknown> }) => ({
    x402Version: 2 as const,
    error,
    resource: { url: ctx.links.url(path), description: p.description, mimeType: "application/json" },
    accepts: schemes.flatMap((s) => s.offers(env(), p, s === refusing?.scheme ? refusing.state : undefined)),
    extensions: {
      [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration(),
      ...withBazaar(opts.catalog?.extension(p.method, p.path)),
    },
  });

  /** a 402 in both versions: v1's body (with the typed-error fields) and v2's PAYMENT-REQUIRED header */
  const refusal = (path: string, p: RoutePrice, refused: Refusal, scheme?: AnyScheme): PaymentAnswer => ({
    status: 402,
    headers: {
      "WWW-Authenticate": wwwAuthenticate(),
      [PAYMENT_HEADERS[2].required]: headerJson(paymentRequired(path, p, refused.error, scheme && { scheme, state: refused.state })),
    },
    body: { x402Version: 1, error: refused.error, accepts: [v1(path, p)], message: `payment refused: ${refused.error}`, ...refused.extra },
  });

  return { payTo, priceOf, v1, v2, paymentRequired, refusal };
}
