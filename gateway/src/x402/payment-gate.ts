/**
 * x402 (versions 1 and 2) as the second credential of protected routes. Every
 * 402 offers both: the v1 body (`accepts`) and the v2 `PAYMENT-REQUIRED`
 * header; a proof comes in v1's `X-PAYMENT` or v2's `PAYMENT-SIGNATURE` and is
 * answered in the same version (`X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE`),
 * with the same guarantees. The gate offers primitives; the route
 * (http/route.ts) puts them in the order that makes charging exactly-once:
 *
 *   authorize   decode the proof, match this route's own requirements (exact
 *               amount, payTo, asset, network, an authorization no longer
 *               than maxTimeoutSeconds), verify with the facilitator, lock
 *               (payer, nonce) durably, resolve the payer's own treasury;
 *   ...         the route claims the Idempotency-Key and the treasury's
 *               conflict slot and runs every check (nothing is charged yet);
 *   settle      only then: the facilitator moves the USDC; a failure undoes
 *               the lock and the treasury created for the request (402);
 *   release     a request that is refused, replayed or conflicted before
 *               settlement frees its proof (it can be used again).
 *
 * The lock is a lease the request renews while it runs. If the request dies,
 * the retry with the same proof takes it over: an unsettled one is settled
 * (once: the facilitator settles an authorization at most once), a settled
 * one that was never served is served without a second charge.
 *
 * The payer is the identity. It lands only on a treasury it stands behind:
 * one registered with its signed ownership proof, or the one its first paid
 * call created (`paid`). A bare registration of its address is never chosen.
 */
import type { Request, Response } from "express";
import { getAddress } from "viem";
import { paymentMiddleware } from "x402-express";
import { SettleError, settleResponseHeader, VerifyError, type FacilitatorConfig, type PaymentPayload, type PaymentRequirements, type SettleResponse } from "x402/types";
import { EMPTY_HOLDINGS } from "../domain/portfolio";
import { TreasuryError } from "../lib/errors";
import type { Credential } from "../domain/credential";
import { newId } from "../lib/ids";
import type { Config } from "../config";
import type { Clock } from "../lib/clock";
import { newHolder } from "../store/lease";
import type { PaymentStore } from "../store/payment-store";
import type { TreasuryStore } from "../store/treasury-store";
import { facilitatorClient } from "./facilitator-client";
import { PAYMENT_HEADERS, PAYMENT_IDENTIFIER, toHeaderJson as headerJson, paymentIdentifierDeclaration, paymentMismatch, paymentOf, signedPayer, X402_NETWORK, X402_NETWORK_V2, type RequirementsV2, type X402Version } from "./payment-match";
import { BAZAAR, type BazaarCatalog } from "./bazaar";
import type { PriceList, RoutePrice } from "./prices";

export { X402_NETWORK } from "./payment-match";

/** a verified, locked payment of one request: settle it once, or release it */
export interface PaymentClaim {
  payer: `0x${string}`;
  nonce: string;
  treasuryId: string;
  /** move the money; on failure the 402 is written, everything undone, and false returned */
  settle(): Promise<boolean>;
  /** the request will not be charged: free the proof (and a treasury created for it) */
  release(): Promise<void>;
  outcome(status: number): Promise<void>;
  /** the request is alive: extend the payment's lease */
  renew(): Promise<unknown>;
}

export interface PaymentGate {
  enabled: boolean;
  /** the 402 of a priced route without a credential; `extensions`: what the route offers beside the price (sign-in-with-x) */
  challenge(req: Request, res: Response, route: { method: string; path: string }, extensions?: Record<string, unknown>): Promise<void>;
  /**
   * A verified, locked payment, or null when the answer (the 402 refusal) was already written. A spent
   * proof proves nothing any more (it is public on chain once settled): it is refused, never a key to a
   * stored answer. Throws payment_in_progress (409) while another request holds the same proof.
   */
  authorize(req: Request, res: Response, route: { method: string; path: string }): Promise<PaymentClaim | null>;
  /** x402 version 2's PaymentRequired of a priced route (what its 402 carries in PAYMENT-REQUIRED) */
  paymentRequired(route: { method: string; path: string }, error?: string): { x402Version: 2; error: string; resource: { url: string; description: string; mimeType: string }; accepts: RequirementsV2[]; extensions: Record<string, unknown> };
  /** the payer of a request's payment proof (either version) whose EIP-3009 signature checks out, else undefined */
  verifiedPayer(header: (name: string) => string | undefined): Promise<string | undefined>;
  /**
   * Who stands behind a request's payment, for its rate limit (a fresh key costs nothing, so a signature
   * alone proves no identity): the payer when the proof is signed by a payer this service has settled a
   * payment of and the route is priced; null for any other proof on a priced route; undefined on a route
   * that takes no payment (the header buys nothing there).
   */
  provenPayer(req: Request): Promise<string | null | undefined>;
  /**
   * A payment whose settlement's outcome was unknown (pending), settled now (once: the facilitator settles an
   * authorization at most once, and EIP-3009's nonce makes a second transfer impossible): `settled` (also when it
   * was not pending), `failed` (it cannot be collected; the record says so), or `unknown` again.
   */
  settlePending(payment: { payer: string; nonce: string }): Promise<"settled" | "failed" | "unknown">;
  /** the request a payment paid for (its own, or a key's credit) answered with this status: the payment is spent */
  spent(payment: { payer: string; nonce: string }, status: number): Promise<void>;
}

/** a settlement whose outcome is not known: the retry with the same proof (or the same Idempotency-Key) is served once, charged at most once */
export const settlementUnknown = (payer: string) =>
  new TreasuryError(
    "payment_settlement_unknown",
    "the facilitator did not answer the settlement of this payment: it may still be mined. Retry with the same proof (or the same Idempotency-Key): the request is served once and the payment is charged at most once",
    { payer, retry_after_seconds: 2 },
    { "Retry-After": "2" },
  );

/** the code of a facilitator's reason (`invalid_transaction_state: <the node's words>` -> `invalid_transaction_state`): no parser or node text reaches the client */
export const reasonCode = (reason: string | undefined): string | undefined => reason?.match(/^[a-z0-9_]+/)?.[0];

/**
 * Payers this service has been paid by (a settled payment in the store, whichever instance settled it):
 * kept here once known, for a while, so a paying client's requests cost no store read; an unknown payer
 * is asked of the store each time (another instance may have settled its first payment meanwhile).
 */
export class KnownPayers {
  private readonly known = new Map<string, number>();
  constructor(
    private readonly settledBefore: (payer: string) => Promise<boolean>,
    private readonly keepMs = 10 * 60_000,
    private readonly max = 10_000,
  ) {}
  add(payer: string, now = Date.now()): void {
    if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
    this.known.set(payer.toLowerCase(), now + this.keepMs);
  }
  async has(payer: string, now = Date.now()): Promise<boolean> {
    const until = this.known.get(payer.toLowerCase());
    if (until !== undefined && until > now) return true;
    if (!(await this.settledBefore(payer))) return false;
    this.add(payer, now);
    return true;
  }
}

/** does the request carry a payment proof of either x402 version? */
export const hasPayment = (req: Request): boolean => paymentOf((n) => req.header(n)) !== undefined;

export function wwwAuthenticate(): string {
  return `Bearer realm="treasury", X402 realm="treasury" scheme="exact" network="${X402_NETWORK}" header="${PAYMENT_HEADERS[1].payment}", X402 realm="treasury" scheme="exact" network="${X402_NETWORK_V2}" header="${PAYMENT_HEADERS[2].payment}"`;
}

const withBazaar = (ext: unknown) => (ext ? { [BAZAAR]: ext } : {});



/**
 * What the gate is given: x402's configuration, the clock, the public links, the transaction boundary and
 * its two stores (services/context.ts's `ServiceContext<"payments" | "treasuries">` is one).
 */
export interface PaymentGateContext {
  config: Pick<Config, "x402">;
  clock: Clock;
  links: { url(path: string): string };
  tx: { transaction<T>(fn: () => Promise<T>): Promise<T> };
  stores: { payments: PaymentStore; treasuries: TreasuryStore };
}

export function createPaymentGate(
  ctx: PaymentGateContext,
  opts: { prices: PriceList; catalog?: BazaarCatalog; asset: { address: `0x${string}`; name: string; version: string }; facilitator: FacilitatorConfig },
): PaymentGate {
  const cfg = ctx.config.x402;
  const payTo = getAddress(cfg.payTo);
  const facilitator = facilitatorClient(opts.facilitator, cfg.facilitatorTimeoutMs);

  const routeConfig = (p: RoutePrice) => ({
    price: { amount: p.atomic.toString(), asset: { address: opts.asset.address, decimals: 6, eip712: { name: opts.asset.name, version: opts.asset.version } } },
    network: X402_NETWORK as "base-sepolia",
    config: { description: p.description, mimeType: "application/json", maxTimeoutSeconds: cfg.maxTimeoutSeconds },
  });
  // built on first use: the price list is filled as the priced routes are registered
  let challengeMiddleware: ReturnType<typeof paymentMiddleware> | undefined;
  const challengeOf = () =>
    (challengeMiddleware ??= paymentMiddleware(payTo, Object.fromEntries(opts.prices.prices.map((p) => [`${p.method} ${p.path}`, routeConfig(p)])), opts.facilitator));

  const priceOf = (route: { method: string; path: string }): RoutePrice => {
    const price = opts.prices.for(route.method, route.path);
    if (!price) throw new Error(`no x402 price for ${route.method} ${route.path}`);
    return price;
  };

  /** the same requirements x402-express puts in the challenge; the resource is the configured public URL, never the Host header */
  const requirementsFor = (req: Request, p: RoutePrice): PaymentRequirements => ({
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
  const requirementsV2 = (p: RoutePrice): RequirementsV2 => ({
    scheme: "exact",
    network: X402_NETWORK_V2,
    amount: p.atomic.toString(),
    asset: getAddress(opts.asset.address),
    payTo,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    extra: { name: opts.asset.name, version: opts.asset.version },
  });
  /** x402 version 2's PaymentRequired for this route: the PAYMENT-REQUIRED header of every 402 (and a paid MCP tool's refusal) */
  const paymentRequiredV2 = (path: string, p: RoutePrice, error: string) => ({
    x402Version: 2 as const,
    error,
    resource: { url: ctx.links.url(path), description: p.description, mimeType: "application/json" },
    accepts: [requirementsV2(p)],
    extensions: {
      [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration(),
      ...withBazaar(opts.catalog?.extension(p.method, p.path)),
    },
  });

  /** a 402 in both versions: v1's body (with the typed-error fields) and v2's PAYMENT-REQUIRED header */
  const refuse = (req: Request, res: Response, p: RoutePrice, error: string, extra: Record<string, unknown> = {}) => {
    res.setHeader("WWW-Authenticate", wwwAuthenticate());
    res.setHeader(PAYMENT_HEADERS[2].required, headerJson(paymentRequiredV2(req.path, p, error)));
    res.status(402).json({
      x402Version: 1,
      error,
      accepts: [requirementsFor(req, p)],
      message: `payment refused: ${error}`,
      request_id: res.locals.requestId,
      ...extra,
    });
  };

  const knownPayers = new KnownPayers((payer) => ctx.stores.payments.hasSettled(payer));

  /**
   * One settlement call, judged: settled (with its transaction), failed (the facilitator answered that it did not
   * and will not happen: nothing was charged), or unknown (no answer, a timeout, a facilitator error: the transfer
   * may have been sent, so nothing may be undone).
   */
  const settleOnce = async (payment: PaymentPayload, requirements: PaymentRequirements): Promise<{ kind: "settled"; transaction: string } | { kind: "failed"; reason: string } | { kind: "unknown" }> => {
    try {
      const settled = await facilitator.settle(payment, requirements);
      return settled.success ? { kind: "settled", transaction: settled.transaction } : { kind: "failed", reason: reasonCode(settled.errorReason) ?? "settlement_refused" };
    } catch (err) {
      if (err instanceof SettleError && err.statusCode < 500) return { kind: "failed", reason: reasonCode(err.errorReason) ?? "settlement_refused" };
      return { kind: "unknown" };
    }
  };

  /** the treasury the payer stands behind, or a new `paid` one (wallet mode) created by this payment */
  const payerTreasury = async (payer: `0x${string}`): Promise<{ treasuryId: string; created: boolean }> => {
    const owned = await ctx.stores.treasuries.findOwnedByWallet(payer);
    if (owned) return { treasuryId: owned.id, created: false };
    const now = ctx.clock.now().toISOString();
    const id = newId("trs");
    await ctx.stores.treasuries.insert({
      id,
      walletAddress: payer,
      chain: "base",
      preset: "balanced",
      executionMode: "wallet",
      status: "active",
      origin: "x402_payer",
      ownership: "paid",
      holdings: EMPTY_HOLDINGS,
      createdAt: now,
      updatedAt: now,
    });
    return { treasuryId: id, created: true };
  };

  return {
    enabled: cfg.enabled,

    paymentRequired: (route, error = "payment_required") => paymentRequiredV2(route.path, priceOf(route), error),

    async verifiedPayer(header) {
      return signedPayer(paymentOf(header)?.decoded, opts.asset);
    },

    async settlePending(payment) {
      const pending = await ctx.stores.payments.pendingSettlement(payment.payer, payment.nonce);
      if (!pending) return "settled";
      const { payment: payload, requirements } = JSON.parse(pending.settlement) as { payment: PaymentPayload; requirements: PaymentRequirements };
      const outcome = await settleOnce(payload, requirements);
      if (outcome.kind === "unknown") return "unknown";
      if (outcome.kind === "failed") {
        await ctx.stores.payments.settlementFailed(payment.payer, payment.nonce);
        return "failed";
      }
      await ctx.stores.payments.settled(payment.payer, payment.nonce, outcome.transaction, pending.treasuryId ?? "", ctx.clock.now().toISOString());
      knownPayers.add(payment.payer);
      return "settled";
    },

    async spent(payment, status) {
      await ctx.stores.payments.outcome(payment.payer, payment.nonce, status);
    },

    async provenPayer(req) {
      if (!opts.prices.for(req.method === "HEAD" ? "GET" : req.method, req.path)) return undefined;
      const payer = await signedPayer(paymentOf((n) => req.header(n))?.decoded, opts.asset);
      return payer && (await knownPayers.has(payer)) ? payer : null;
    },

    async challenge(req, res, route, extensions = {}) {
      const price = priceOf(route);
      const requirements = requirementsFor(req, price);
      const required = paymentRequiredV2(req.path, price, "payment_required");
      res.setHeader("WWW-Authenticate", wwwAuthenticate());
      res.setHeader(PAYMENT_HEADERS[2].required, headerJson({ ...required, extensions: { ...required.extensions, ...extensions } }));
      // x402-express writes the x402 v1 body; the resource is ours (configured URL), the typed-error fields ride along
      const json = res.json.bind(res);
      res.json = (body: Record<string, unknown>) =>
        json({
          ...body,
          accepts: Array.isArray(body.accepts) ? body.accepts.map((a: Record<string, unknown>) => ({ ...a, resource: requirements.resource })) : body.accepts,
          message: "payment required: pay per request with x402 (version 1: an X-PAYMENT header for one of `accepts`; version 2: a PAYMENT-SIGNATURE header for the PAYMENT-REQUIRED header's requirements), or send Authorization: Bearer <API key>",
          request_id: res.locals.requestId,
          ...(Object.keys(extensions).length > 0 ? { extensions } : {}),
        });
      // HEAD is answered as the GET it stands for (no body is sent)
      const asRoute = req.method === "HEAD" ? Object.assign(Object.create(req) as Request, { method: "GET" }) : req;
      await challengeOf()(asRoute, res, () => {
        throw new Error(`no x402 price for ${req.method} ${req.path}`);
      });
    },

    async authorize(req, res, route) {
      const price = priceOf(route);
      const sent = paymentOf((n) => req.header(n));
      const version: X402Version = sent?.version ?? 1;
      const decoded = sent?.decoded;
      const resource = ctx.links.url(req.path);
      const mismatch = paymentMismatch(decoded, { priceAtomic: price.atomic, payTo, asset: getAddress(opts.asset.address), resource, maxTimeoutSeconds: cfg.maxTimeoutSeconds, nowSeconds: BigInt(Math.floor(ctx.clock.now().getTime() / 1000)) });
      if (mismatch || !decoded) {
        refuse(req, res, price, mismatch?.error ?? "invalid_payment_header", mismatch?.extra ?? {});
        return null;
      }
      const { authorization } = decoded;
      // the facilitator gets the proof in the version it was made in, with this route's requirements in that version
      const payment = (decoded.version === 2 ? decoded.payment : { ...decoded.payment, x402Version: 1 }) as PaymentPayload;
      const requirements = (version === 2 ? requirementsV2(price) : requirementsFor(req, price)) as PaymentRequirements;
      const settlementHeader = (s: { success: boolean; transaction: string; payer?: string; errorReason?: string }) =>
        version === 2 ? headerJson({ ...s, network: X402_NETWORK_V2 }) : settleResponseHeader({ ...s, network: X402_NETWORK } as SettleResponse);

      let verified;
      try {
        verified = await facilitator.verify(payment, requirements);
      } catch (err) {
        // the facilitator answered and refused the proof itself (malformed, say): the client's fault, a 402
        if (err instanceof VerifyError && err.statusCode < 500) {
          refuse(req, res, price, "invalid_payment", { reason: reasonCode(err.invalidReason) });
          return null;
        }
        throw new TreasuryError("payment_facilitator_unavailable", "the x402 facilitator could not be reached; retry later (nothing was charged)", {}, { "Retry-After": "5" });
      }
      // an authorization used on chain may be this service's own payment, settled by a request that died before
      // answering: with a valid signature and this service's record of it, the lock below decides (take over, or refuse)
      const ownDeadPayment =
        !verified.isValid &&
        /nonce_used/.test(verified.invalidReason ?? "") &&
        (await signedPayer(decoded, opts.asset))?.toLowerCase() === authorization.from.toLowerCase() &&
        (await ctx.stores.payments.seen(authorization.from, authorization.nonce));
      if (!verified.isValid && !ownDeadPayment) {
        refuse(req, res, price, reasonCode(verified.invalidReason) ?? "invalid_payment", { payer: verified.payer });
        return null;
      }

      const payer = getAddress(authorization.from);
      const nonce = authorization.nonce;
      const routeKey = `${route.method} ${route.path}`;
      const holder = newHolder("pay");
      // lock the proof (under a lease) and resolve the payer's treasury in one transaction
      const locked = await ctx.tx.transaction(async () => {
        const lock = await ctx.stores.payments.lock({ payer, nonce, route: routeKey, amountAtomic: price.atomic, treasuryId: null, holder, now: ctx.clock.now() });
        if (lock.kind === "busy" || lock.kind === "used") return lock;
        const treasury = lock.kind === "settled_unserved" && lock.treasuryId ? { treasuryId: lock.treasuryId, created: false } : await payerTreasury(payer);
        return { ...lock, ...treasury };
      });
      if (locked.kind === "used") {
        // a client that lost its answer pays the retry with a fresh proof (same Idempotency-Key or payment-identifier):
        // the stored answer, and the fresh proof is released unsettled
        refuse(req, res, price, "payment_already_used", { payer });
        return null;
      }
      if (locked.kind === "busy") {
        // not a 402: a conforming client would pay again
        throw new TreasuryError("payment_in_progress", "this payment is being served by another request; retry after Retry-After seconds with the same proof (it is charged at most once)", { payer, retry_after_seconds: 1 }, { "Retry-After": "1" });
      }
      const { treasuryId, created } = locked;
      const takenOver = locked.kind === "locked" && locked.takenOver;
      // a dead request's payment that was settled and never served: this request is its service, free
      const alreadySettled = locked.kind === "settled_unserved" ? { transaction: locked.transactionHash ?? "" } : undefined;
      const credential: Credential = { kind: "x402", scope: `payer:${payer.toLowerCase()}`, treasuryId, subject: payer };
      res.locals.credential = credential;
      res.setHeader("X-Treasury-Id", treasuryId);

      let done = false;
      const release = async () => {
        if (done) return;
        done = true;
        // settled, or taken over from a dead request (maybe settled before it died): the row stays for the next retry
        if (alreadySettled || takenOver) return ctx.stores.payments.lapse(payer, nonce, holder, ctx.clock.now());
        await ctx.tx.transaction(async () => {
          await ctx.stores.payments.release(payer, nonce, holder);
          if (created) await ctx.stores.treasuries.removeUnused(treasuryId);
        });
      };
      return {
        payer,
        nonce,
        treasuryId,
        release,
        renew: async () => await ctx.stores.payments.renew(payer, nonce, holder, ctx.clock.now()),
        outcome: async (status) => await ctx.stores.payments.outcome(payer, nonce, status),
        settle: async () => {
          if (done) throw new Error("payment already settled or released");
          if (alreadySettled) {
            done = true;
            res.setHeader(PAYMENT_HEADERS[version].response, settlementHeader({ success: true, transaction: alreadySettled.transaction, payer }));
            return true;
          }
          // the facilitator settles an authorization at most once: a takeover's second call returns the first settlement
          const outcome = await settleOnce(payment, requirements);
          if (outcome.kind === "unknown") {
            // no answer: the transfer may be on its way. Not a failure: the lock is kept (its lease lapsed, so the retry
            // takes it over at once) with what to settle again, and the retry with the same proof is served once
            done = true;
            await ctx.stores.payments.pending(payer, nonce, holder, JSON.stringify({ payment, requirements }), ctx.clock.now());
            res.locals.credential = undefined;
            res.removeHeader("X-Treasury-Id");
            throw settlementUnknown(payer);
          }
          if (outcome.kind === "failed") {
            await release();
            res.locals.credential = undefined;
            res.removeHeader("X-Treasury-Id");
            refuse(req, res, price, "settlement_failed", { reason: outcome.reason, payer });
            return false;
          }
          done = true;
          await ctx.stores.payments.settled(payer, nonce, outcome.transaction, treasuryId, ctx.clock.now().toISOString());
          knownPayers.add(payer);
          res.setHeader(PAYMENT_HEADERS[version].response, settlementHeader({ success: true, transaction: outcome.transaction, payer }));
          return true;
        },
      };
    },
  };
}
