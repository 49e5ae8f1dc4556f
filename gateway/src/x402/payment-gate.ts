/**
 * x402 (version 1) as the second credential of protected routes.
 *
 * - No credential: the 402 challenge comes from x402-express (the stock
 *   middleware, used only to answer the challenge), plus WWW-Authenticate
 *   naming both schemes.
 * - X-PAYMENT: decoded, matched against this route's own requirements (exact
 *   amount, payTo, asset, network), verified by the facilitator, then locked
 *   on (payer, nonce) so a replayed or concurrent proof never runs a handler
 *   twice. The payer is the identity: its treasury (created in wallet mode on
 *   the first paid call) is the credential's treasury.
 * - State-changing routes settle before acting: the request is checked first
 *   (4xx charges nothing), then settled, then executed. Read-only routes run,
 *   then settle; a failed settlement discards the answer. Either way a failed
 *   settlement leaves nothing behind (the lock is released and a treasury
 *   created for this request is removed).
 */
import type { Request, Response } from "express";
import { getAddress } from "viem";
import { paymentMiddleware } from "x402-express";
import { exact } from "x402/schemes";
import { settleResponseHeader, type FacilitatorConfig, type PaymentPayload, type PaymentRequirements, type SettleResponse } from "x402/types";
import { EMPTY_HOLDINGS } from "../domain/portfolio";
import { ApiError } from "../http/errors";
import type { Credential } from "../http/credential";
import { newId } from "../lib/ids";
import type { AppContext } from "../services/context";
import { facilitatorClient } from "./facilitator-client";
import type { PriceList, RoutePrice } from "./prices";

export const X402_NETWORK = "base-sepolia";

export interface PaymentSteps {
  /** state-changing routes: throws the typed error the request would end in, writing nothing */
  precheck(): Promise<void>;
  /** state-changing routes: would the Idempotency-Key replay or refuse instead of executing? */
  idempotencyTaken(): boolean;
  /** state-changing routes: the normal flow, which writes the response */
  runNormal(): Promise<void>;
  /** read-only routes: the handler's result, or a thrown typed error */
  runCaptured(): Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;
}

export interface PaymentGate {
  enabled: boolean;
  challenge(req: Request, res: Response): Promise<void>;
  handle(req: Request, res: Response, route: { method: string; path: string; stateChanging: boolean }, steps: PaymentSteps): Promise<void>;
  /** the payer an X-PAYMENT header claims (for rate limits), without verifying it */
  claimedPayer(header: string): string | undefined;
}

export function wwwAuthenticate(): string {
  return 'Bearer realm="treasury", X402 realm="treasury" scheme="exact" network="base-sepolia" header="X-PAYMENT"';
}

export function createPaymentGate(
  ctx: AppContext,
  opts: { prices: PriceList; asset: { address: `0x${string}`; name: string; version: string }; facilitator: FacilitatorConfig },
): PaymentGate {
  const cfg = ctx.config.x402;
  const payTo = getAddress(cfg.payTo);
  const facilitator = facilitatorClient(opts.facilitator);

  const routeConfig = (p: RoutePrice) => ({
    price: { amount: p.atomic.toString(), asset: { address: opts.asset.address, decimals: 6, eip712: { name: opts.asset.name, version: opts.asset.version } } },
    network: X402_NETWORK as "base-sepolia",
    config: { description: p.description, mimeType: "application/json", maxTimeoutSeconds: cfg.maxTimeoutSeconds },
  });
  const challengeMiddleware = paymentMiddleware(
    payTo,
    Object.fromEntries(opts.prices.prices.map((p) => [`${p.method} ${p.path}`, routeConfig(p)])),
    opts.facilitator,
  );

  /** the same requirements x402-express puts in the challenge, for this route and request */
  const requirementsFor = (req: Request, p: RoutePrice): PaymentRequirements => ({
    scheme: "exact",
    network: X402_NETWORK,
    maxAmountRequired: p.atomic.toString(),
    resource: `${req.protocol}://${req.headers.host}${req.path}` as `${string}://${string}`,
    description: p.description,
    mimeType: "application/json",
    payTo,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    asset: getAddress(opts.asset.address),
    outputSchema: { input: { type: "http", method: p.method, discoverable: true } },
    extra: { name: opts.asset.name, version: opts.asset.version },
  });

  const refuse = (res: Response, requirements: PaymentRequirements, error: string, extra: Record<string, unknown> = {}) => {
    res.setHeader("WWW-Authenticate", wwwAuthenticate());
    res.status(402).json({
      x402Version: 1,
      error,
      accepts: [requirements],
      message: `payment refused: ${error}`,
      request_id: res.locals.requestId,
      ...extra,
    });
  };

  const payerTreasury = (payer: `0x${string}`): { treasuryId: string; created: boolean } => {
    const existing = ctx.stores.treasuries.findByWallet(payer);
    if (existing) return { treasuryId: existing.id, created: false };
    const now = ctx.clock.now().toISOString();
    const id = newId("trs");
    ctx.stores.treasuries.insert({
      id,
      walletAddress: payer,
      chain: "base",
      preset: "balanced",
      executionMode: "wallet",
      status: "active",
      origin: "x402_payer",
      holdings: EMPTY_HOLDINGS,
      createdAt: now,
      updatedAt: now,
    });
    return { treasuryId: id, created: true };
  };

  const removeTreasury = (id: string) => {
    ctx.db.prepare("DELETE FROM treasuries WHERE id = ? AND origin = 'x402_payer' AND NOT EXISTS (SELECT 1 FROM executions WHERE treasury_id = ?) AND NOT EXISTS (SELECT 1 FROM envelopes WHERE treasury_id = ?)").run(id, id, id);
  };

  return {
    enabled: cfg.enabled,

    claimedPayer(header: string) {
      try {
        const decoded = exact.evm.decodePayment(header) as PaymentPayload;
        const from = (decoded.payload as { authorization?: { from?: string } }).authorization?.from;
        return from && /^0x[0-9a-fA-F]{40}$/.test(from) ? from.toLowerCase() : undefined;
      } catch {
        return undefined;
      }
    },

    async challenge(req, res) {
      res.setHeader("WWW-Authenticate", wwwAuthenticate());
      // x402-express writes the x402 v1 body; the service's typed-error fields ride along
      const json = res.json.bind(res);
      res.json = (body: Record<string, unknown>) =>
        json({
          ...body,
          message: "payment required: pay per request with an x402 X-PAYMENT header (see accepts), or send Authorization: Bearer <API key>",
          request_id: res.locals.requestId,
        });
      await challengeMiddleware(req, res, () => {
        throw new Error(`no x402 price for ${req.method} ${req.path}`);
      });
    },

    async handle(req, res, route, steps) {
      const price = opts.prices.for(route.method, route.path);
      if (!price) throw new Error(`no x402 price for ${route.method} ${route.path}`);
      const requirements = requirementsFor(req, price);

      let payment: PaymentPayload;
      try {
        payment = exact.evm.decodePayment(req.header("x-payment")!) as PaymentPayload;
      } catch {
        return refuse(res, requirements, "invalid_payment_header");
      }
      const authorization = (payment.payload as { authorization?: { from: `0x${string}`; to: string; value: string; nonce: string } }).authorization;
      if (payment.scheme !== "exact" || payment.network !== X402_NETWORK || !authorization) return refuse(res, requirements, "unsupported_scheme_or_network");
      if (getAddress(authorization.to) !== payTo) return refuse(res, requirements, "payment_recipient_mismatch");
      if (BigInt(authorization.value) !== price.atomic) {
        return refuse(res, requirements, "payment_does_not_match_route", { expected_amount: price.atomic.toString(), received_amount: authorization.value });
      }
      payment.x402Version = 1;

      let verified;
      try {
        verified = await facilitator.verify(payment, requirements);
      } catch (err) {
        throw new ApiError(503, "payment_facilitator_unavailable", `the x402 facilitator did not answer: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (!verified.isValid) return refuse(res, requirements, verified.invalidReason ?? "invalid_payment", { payer: verified.payer });

      const payer = getAddress(authorization.from);
      const nonce = authorization.nonce;
      const routeKey = `${route.method} ${route.path}`;
      if (!ctx.stores.payments.lock({ payer, nonce, route: routeKey, amountAtomic: price.atomic, treasuryId: null, at: ctx.clock.now().toISOString() })) {
        return refuse(res, requirements, "payment_already_used", { payer });
      }
      const { treasuryId, created } = payerTreasury(payer);
      const credential: Credential = { kind: "x402", scope: `payer:${payer.toLowerCase()}`, treasuryId, subject: payer };
      res.locals.credential = credential;
      res.setHeader("X-Treasury-Id", treasuryId);

      const undo = () => {
        ctx.stores.payments.release(payer, nonce);
        if (created) removeTreasury(treasuryId);
      };
      const settle = async (): Promise<boolean> => {
        let settled: SettleResponse | undefined;
        let failure: string | undefined;
        try {
          settled = await facilitator.settle(payment, requirements);
          if (!settled.success) failure = settled.errorReason ?? "unknown";
        } catch (err) {
          failure = err instanceof Error ? err.message : String(err);
        }
        if (!settled || failure !== undefined) {
          undo();
          res.locals.credential = undefined;
          res.removeHeader("X-Treasury-Id");
          refuse(res, requirements, "settlement_failed", { reason: failure, payer });
          return false;
        }
        ctx.stores.payments.settled(payer, nonce, settled.transaction, treasuryId, ctx.clock.now().toISOString());
        res.setHeader("X-PAYMENT-RESPONSE", settleResponseHeader(settled));
        return true;
      };

      if (route.stateChanging) {
        // a replay or refusal of the Idempotency-Key executes nothing: charge nothing
        if (steps.idempotencyTaken()) {
          undo();
          return steps.runNormal();
        }
        try {
          await steps.precheck();
        } catch (err) {
          undo();
          throw err;
        }
        if (!(await settle())) return;
        await steps.runNormal();
        ctx.stores.payments.outcome(payer, nonce, res.statusCode);
        return;
      }

      let result;
      try {
        result = await steps.runCaptured();
      } catch (err) {
        undo();
        throw err;
      }
      if (result.status >= 400) {
        undo();
        res.status(result.status).json(result.body);
        return;
      }
      if (!(await settle())) return;
      for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
      ctx.stores.payments.outcome(payer, nonce, result.status);
      res.status(result.status).json(result.body);
    },
  };
}
