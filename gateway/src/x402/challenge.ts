/**
 * The 402 of a priced route without a credential: x402-express writes the x402 v1 challenge (the route's
 * price from the price list); the resource is ours (the configured URL), the typed-error fields ride
 * along, and v2's PAYMENT-REQUIRED header carries the same requirements with the route's extensions
 * (payment-identifier, bazaar, and what the route offers beside the price: sign-in-with-x).
 */
import type { Request, Response } from "express";
import { paymentMiddleware } from "x402-express";
import type { PaymentGateContext, PaymentGateOptions } from "./gate-context";
import { PAYMENT_HEADERS, toHeaderJson as headerJson, X402_NETWORK } from "./payment-match";
import type { RoutePrice } from "./prices";
import { wwwAuthenticate, type RouteRequirements } from "./route-requirements";

export type Challenge = (req: Request, res: Response, route: { method: string; path: string }, extensions?: Record<string, unknown>) => Promise<void>;

export function challenger(ctx: Pick<PaymentGateContext, "config">, opts: PaymentGateOptions, requirements: RouteRequirements): Challenge {
  const cfg = ctx.config.x402;
  const routeConfig = (p: RoutePrice) => ({
    price: { amount: p.atomic.toString(), asset: { address: opts.asset.address, decimals: 6, eip712: { name: opts.asset.name, version: opts.asset.version } } },
    network: X402_NETWORK as "base-sepolia",
    config: { description: p.description, mimeType: "application/json", maxTimeoutSeconds: cfg.maxTimeoutSeconds },
  });
  // built on first use: the price list is filled as the priced routes are registered
  let challengeMiddleware: ReturnType<typeof paymentMiddleware> | undefined;
  const challengeOf = () =>
    (challengeMiddleware ??= paymentMiddleware(
      requirements.payTo,
      Object.fromEntries(opts.prices.prices.map((p) => [`${p.method} ${p.path}`, routeConfig(p)])),
      opts.facilitator,
    ));

  return async (req, res, route, extensions = {}) => {
    const price = requirements.priceOf(route);
    const accepted = requirements.v1(req, price);
    const required = requirements.paymentRequired(req.path, price, "payment_required");
    res.setHeader("WWW-Authenticate", wwwAuthenticate());
    res.setHeader(PAYMENT_HEADERS[2].required, headerJson({ ...required, extensions: { ...required.extensions, ...extensions } }));
    const json = res.json.bind(res);
    res.json = (body: Record<string, unknown>) =>
      json({
        ...body,
        accepts: Array.isArray(body.accepts) ? body.accepts.map((a: Record<string, unknown>) => ({ ...a, resource: accepted.resource })) : body.accepts,
        message:
          "payment required: pay per request with x402 (version 1: an X-PAYMENT header for one of `accepts`; version 2: a PAYMENT-SIGNATURE header for the PAYMENT-REQUIRED header's requirements), or send Authorization: Bearer <API key>",
        request_id: res.locals.requestId,
        ...(Object.keys(extensions).length > 0 ? { extensions } : {}),
      });
    // HEAD is answered as the GET it stands for (no body is sent)
    const asRoute = req.method === "HEAD" ? Object.assign(Object.create(req) as Request, { method: "GET" }) : req;
    await challengeOf()(asRoute, res, () => {
      throw new Error(`no x402 price for ${req.method} ${req.path}`);
    });
  };
}
