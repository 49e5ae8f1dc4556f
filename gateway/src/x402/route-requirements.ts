/**
 * A priced route's payment requirements, as each x402 version states them: v1's (x402-express's shape,
 * the 402's `accepts`), v2's (CAIP-2 network, `amount`; the PAYMENT-REQUIRED header), and the 402 that
 * offers both. The resource is the configured public URL, never the Host header.
 */
import type { Request, Response } from "express";
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
import { sessionRequirements, type SessionTerms } from "./schemes/session/voucher";
import { UPTO_SCHEME } from "./schemes/upto/permit";

export function wwwAuthenticate(): string {
  return `Bearer realm="treasury", X402 realm="treasury" scheme="exact" network="${X402_NETWORK}" header="${PAYMENT_HEADERS[1].payment}", X402 realm="treasury" scheme="exact" network="${X402_NETWORK_V2}" header="${PAYMENT_HEADERS[2].payment}"`;
}

const withBazaar = (ext: unknown) => (ext ? { [BAZAAR]: ext } : {});

export type RouteRequirements = ReturnType<typeof routeRequirements>;

export function routeRequirements(ctx: Pick<PaymentGateContext, "config" | "links">, opts: PaymentGateOptions) {
  const cfg = ctx.config.x402;
  const payTo = getAddress(cfg.payTo);
  /** x402 sessions (`batch-settlement`), offered beside `exact` when configured */
  const sessions: SessionTerms | undefined = cfg.sessions && {
    payTo,
    receiverAuthorizer: cfg.sessions.receiverAuthorizer,
    asset: getAddress(opts.asset.address),
    withdrawDelaySeconds: cfg.sessions.withdrawDelaySeconds,
  };

  const priceOf = (route: { method: string; path: string }): RoutePrice => {
    const price = opts.prices.for(route.method, route.path);
    if (!price) throw new Error(`no x402 price for ${route.method} ${route.path}`);
    return price;
  };

  /** the same requirements x402-express puts in the challenge */
  const v1 = (req: Request, p: RoutePrice): PaymentRequirements => ({
    scheme: "exact",
    network: X402_NETWORK,
    maxAmountRequired: p.atomic.toString(),
    resource: ctx.links.url(req.path) as `${string}://${string}`,
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

  /** the session offer of this route: the price of a call, the channel's terms, and (a corrective 402) the channel's state here */
  const session = (p: RoutePrice, state?: Record<string, unknown>) => {
    if (!sessions) return [];
    const r = sessionRequirements({ priceAtomic: p.atomic, maxTimeoutSeconds: cfg.maxTimeoutSeconds, asset: opts.asset }, sessions);
    return [{ ...r, extra: { ...r.extra, ...state } }];
  };

  /** the `upto` offer of a metered route: the payer signs the route's price as a maximum, and is charged what the call used */
  const upto = (p: RoutePrice) =>
    p.meter && cfg.uptoFacilitator
      ? [
          {
            ...v2(p),
            scheme: UPTO_SCHEME,
            extra: { name: opts.asset.name, version: opts.asset.version, assetTransferMethod: "permit2", facilitatorAddress: cfg.uptoFacilitator },
          },
        ]
      : [];

  /** x402 version 2's PaymentRequired for this route: the PAYMENT-REQUIRED header of every 402 (and a paid MCP tool's refusal) */
  const paymentRequired = (path: string, p: RoutePrice, error: string, sessionState?: Record<string, unknown>) => ({
    x402Version: 2 as const,
    error,
    resource: { url: ctx.links.url(path), description: p.description, mimeType: "application/json" },
    accepts: [v2(p), ...session(p, sessionState), ...upto(p)],
    extensions: {
      [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration(),
      ...withBazaar(opts.catalog?.extension(p.method, p.path)),
    },
  });

  /** a 402 in both versions: v1's body (with the typed-error fields) and v2's PAYMENT-REQUIRED header */
  const refuse = (req: Request, res: Response, p: RoutePrice, error: string, extra: Record<string, unknown> = {}, sessionState?: Record<string, unknown>) => {
    res.setHeader("WWW-Authenticate", wwwAuthenticate());
    res.setHeader(PAYMENT_HEADERS[2].required, headerJson(paymentRequired(req.path, p, error, sessionState)));
    res.status(402).json({
      x402Version: 1,
      error,
      accepts: [v1(req, p)],
      message: `payment refused: ${error}`,
      request_id: res.locals.requestId,
      ...extra,
    });
  };

  return { payTo, priceOf, v1, v2, sessions, session, upto, paymentRequired, refuse };
}
