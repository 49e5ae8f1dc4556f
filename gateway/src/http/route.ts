/**
 * One declaration per endpoint: the same zod schemas validate the request at
 * the edge and describe it in the OpenAPI document, so the two cannot drift.
 */
import type { OpenAPIRegistry, ResponseConfig, RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { Request, Response } from "express";
import type { RouteSink } from "./dispatcher";
import type { ZodType } from "zod";
import { ErrorResponse as ErrorResponseSchema } from "../schemas/common";
import { z } from "../schemas/zod";
import { checkIdempotencyKey, idempotent, requestFingerprint, whileLeased, type Outcome } from "../services/idempotency";
import { isContention } from "../store/db";
import { newHolder } from "../store/lease";
import type { IdempotencyStore } from "../store/idempotency-store";
import type { BazaarCatalog } from "../x402/bazaar";
import type { PriceList } from "../x402/prices";
import { hasPayment, settlementUnknown, type PaymentClaim, type PaymentGate } from "../x402/payment-gate";
import { SIWX_EXTENSION_KEY, SIWX_HEADER } from "../x402/sign-in-with-x";
import { PAYMENT_HEADERS, paymentIdentifier, paymentOf } from "../x402/payment-match";
import { jsonTextOf, sendJson, sendJsonText } from "./json-response";
import { errorBody, fromZodError, statusOf } from "./errors";
import { TreasuryError } from "../lib/errors";

export type Method = "get" | "post";

export interface HandlerContext<B, Q, P> {
  req: Request;
  res: Response;
  body: B;
  query: Q;
  params: P;
}

export interface HandlerResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface ResponseSpec {
  description: string;
  schema?: ZodType;
  headers?: Record<string, { description: string; schema: { type: "string" | "integer" } }>;
}

/** A route's x402 price (atomic USDC) and what it buys: declared on the route, collected into the price list. */
export interface PriceSpec {
  atomic: bigint;
  description: string;
}

/**
 * The MCP tool of a route: the same capability, served by this route (its
 * input is the route's body or query schema, plus `idempotency_key` when the
 * route takes an Idempotency-Key; its output schema is the route's documented
 * answers; it is priced when the route is).
 */
export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  /** changes nothing (default: GET routes) */
  readOnly?: boolean;
  /** the same call twice has the effect of one (default: read-only routes and routes with an Idempotency-Key) */
  idempotent?: boolean;
  /** reaches outside the service: a chain, a human reviewer (default false) */
  openWorld?: boolean;
  /** with a bearer key, the tool is served by this route (same method) instead: the treasury's own view */
  withKey?: string;
}

/** none; bearer (API key only); bearer_or_x402 (spec 5: either credential; the route must have an x402 price); admin */
export type Security = "none" | "bearer" | "bearer_or_x402" | "admin";

export interface RouteSpec<B = unknown, Q = unknown, P = unknown> {
  method: Method;
  /** express path, e.g. /api/v1/treasuries/:id */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Security;
  /** documents the Idempotency-Key header as required */
  idempotencyKey?: boolean;
  /** route is a documented extension of the spec */
  extension?: boolean;
  /** hide from the public OpenAPI document (admin API) */
  internal?: boolean;
  /** the x402 price (required with bearer_or_x402, refused without) */
  price?: PriceSpec;
  /**
   * A route a wallet must never be kept from by money (a downward leg): it also takes the wallet's own
   * signature, x402's sign-in-with-x (header SIGN-IN-WITH-X), free. Its 402 offers the extension beside the price.
   */
  siwx?: boolean;
  /** the MCP tool this route serves */
  tool?: ToolSpec;
  /** `example`: a valid request body, shown in OpenAPI and in the route's x402 bazaar metadata */
  request?: { body?: ZodType<B>; bodyRequired?: boolean; query?: ZodType<Q>; params?: ZodType<P>; example?: B };
  responses: Record<number, ResponseSpec>;
  /**
   * State-changing routes: every check the request must pass (throws its typed
   * 4xx) and the claim of what it will act on (the treasury's conflict slot),
   * atomically, before a payment is settled. Returns the release, called once
   * the handler is done. The handler finds the holder in res.locals.slotHolder.
   */
  reserve?: (ctx: HandlerContext<B, Q, P>, holder: string) => Promise<() => Promise<void>>;
  /**
   * A bearer request whose whole effect is in the store (a sandbox key's ledger action): true makes its
   * Idempotency-Key claim, the handler and the stored answer one database transaction, one write instead
   * of three, with nothing to lease and nothing left half-done by a crash. The handler's own transaction
   * makes every check, so `reserve` is not called. Never asked for a paid request (its settlement is
   * outside the store).
   */
  storeOnly?: (ctx: HandlerContext<B, Q, P>) => Promise<boolean> | boolean;
  /** idempotency scope of a route without a credential (e.g. the relay: the transaction's signer) */
  idempotencyScope?: (ctx: HandlerContext<B, Q, P>) => Promise<string> | string;
  handler: (ctx: HandlerContext<B, Q, P>) => Promise<HandlerResult> | HandlerResult;
}

/** the Idempotency-Key of a state-changing call: the REST header, and the `idempotency_key` argument of its MCP tool */
export const IdempotencyKey = z
  .string()
  .min(8)
  .max(120)
  .regex(/^[!-~]([ -~]*[!-~])?$/)
  .describe("unique per state-changing call (8 to 120 characters; printable ASCII, no space at either end: an HTTP header value); retrying with the same key and arguments returns the first result");

export const toOpenApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_]+)/g, "{$1}");

/** Tracks which methods exist per path so unsupported ones answer 405, and the routes that serve an MCP tool. */
export class RouteTable {
  private readonly methods = new Map<string, Set<string>>();
  private readonly tooled: RouteSpec<any, any, any>[] = [];
  /** the declarations of the routes that serve an MCP tool, in registration order */
  toolRoutes(): readonly RouteSpec<any, any, any>[] {
    return this.tooled;
  }
  addTool(spec: RouteSpec<any, any, any>): void {
    if (this.tooled.some((t) => t.tool!.name === spec.tool!.name)) throw new Error(`MCP tool ${spec.tool!.name} is declared twice`);
    this.tooled.push(spec);
  }
  private readonly specs = new Map<string, RouteSpec<any, any, any>>();
  /** a registered route's declaration */
  routeOf(method: string, path: string): RouteSpec<any, any, any> | undefined {
    return this.specs.get(`${method.toUpperCase()} ${path}`);
  }
  declare(spec: RouteSpec<any, any, any>): void {
    this.specs.set(`${spec.method.toUpperCase()} ${spec.path}`, spec);
  }
  add(path: string, method: string): void {
    const set = this.methods.get(path) ?? new Set<string>();
    set.add(method.toUpperCase());
    if (method === "get") set.add("HEAD");
    this.methods.set(path, set);
  }
  entries(): [string, string[]][] {
    return [...this.methods.entries()].map(([p, m]) => [p, [...m].sort()]);
  }
}

const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Remaining": { description: "requests left in the current window", schema: { type: "integer" as const } },
  "X-RateLimit-Reset": { description: "when the window resets (Unix time, seconds)", schema: { type: "integer" as const } },
  "X-Request-Id": { description: "request identifier, also in error bodies", schema: { type: "string" as const } },
};

/** what paying with x402 adds to a priced route's answers (appended to a status the route already documents) */
const PAYMENT_RESPONSES = (own: Record<number, ResponseSpec>): Record<number, ResponseSpec> => {
  const add = {
    503: "payment_facilitator_unavailable: the x402 facilitator could not be reached to verify the proof (nothing was charged; Retry-After); payment_settlement_unknown: the facilitator did not answer the settlement, which may still be mined: retry with the same proof (or, on an action, the same Idempotency-Key): the request is served once and charged at most once (Retry-After)",
    400: "invalid_payment_identifier: a v2 proof's payment-identifier id is not 16 to 128 characters of [A-Za-z0-9_-]",
    409: "payment_in_progress: the same proof, or a proof with the same payment-identifier (x402 v2), is still being served: retry after Retry-After seconds (charged at most once; never a 402, which would make a conforming client pay again); payment_identifier_reused: that identifier was used for a different request",
  } as const;
  return Object.fromEntries(
    Object.entries(add).map(([status, text]) => {
      const existing = own[Number(status)];
      return [status, existing ? { ...existing, description: `${existing.description}; ${text}` } : { description: text, schema: ErrorResponseSchema }];
    }),
  );
};

const PAYMENT_RESPONSE_HEADER_NAMES = [PAYMENT_HEADERS[1].response.toLowerCase(), PAYMENT_HEADERS[2].response.toLowerCase()];

/** the settlement of a paid request, in the version its proof was made in */
const PAYMENT_RESPONSE_HEADERS = {
  "X-PAYMENT-RESPONSE": { description: "paid with x402 version 1: base64 of the settlement JSON (success, transaction, network base-sepolia, payer)", schema: { type: "string" as const } },
  "PAYMENT-RESPONSE": { description: "paid with x402 version 2: base64 of the settlement JSON (success, transaction, network eip155:84532, payer)", schema: { type: "string" as const } },
};

/** The x402 v1 challenge body (x402-express), with the service's typed-error fields alongside. */
export const X402Challenge = z
  .object({
    x402Version: z.literal(1),
    error: z.string(),
    accepts: z.array(
      z
        .object({
          scheme: z.literal("exact"),
          network: z.string(),
          maxAmountRequired: z.string(),
          resource: z.string(),
          description: z.string(),
          payTo: z.string(),
          asset: z.string(),
          maxTimeoutSeconds: z.number(),
        })
        .passthrough(),
    ),
    message: z.string().optional(),
    request_id: z.string().optional(),
    payer: z.string().optional().openapi({ description: "the payer of a refused payment" }),
    reason: z.string().optional().openapi({ description: "with invalid_payment and settlement_failed: the facilitator's reason, as a code" }),
  })
  .passthrough()
  .openapi("X402Challenge");

/** What routes need from the outside: authentication and the idempotency store. */
export interface RouteHooks {
  /** sets res.locals.credential or throws a typed 401/403 */
  authenticate?: (req: Request, res: Response) => Promise<void> | void;
  /** the x402 credential: challenge without a credential, pay-per-request with X-PAYMENT */
  payments?: PaymentGate;
  /** the wallet's own signature (x402 sign-in-with-x) on the routes that declare `siwx` */
  walletSignature?: { authenticate(req: Request, res: Response): Promise<void>; challenge(req: Request): unknown; unauthorized?(req: Request): Error };
  /** the price list each priced route's declared price is entered in */
  prices?: PriceList;
  idempotency?: IdempotencyStore;
  /** the x402 bazaar catalogue: every priced route is entered with its schemas */
  catalog?: BazaarCatalog;
  /** keep the reservations (treasury slots) of a live request's holder from expiring */
  renewReservations?: (holder: string) => Promise<unknown>;
  /** one database transaction (a route's storeOnly requests run in one) */
  transaction?: <T>(fn: () => Promise<T>) => Promise<T>;
  now?: () => Date;
}

export const IDEMPOTENCY_REPLAY_HEADER = "Idempotent-Replayed";

/** the typed outcome of a handler: its result, or its typed 4xx as a response (5xx and the unexpected rethrow) */
async function outcomeOf(res: Response, run: () => Promise<HandlerResult>): Promise<Outcome> {
  try {
    const result = settledResult(await run());
    return { status: result.status, headers: result.headers ?? {}, body: jsonTextOf(result.body) };
  } catch (err) {
    if (err instanceof TreasuryError && statusOf(err) < 500) {
      return { status: statusOf(err), headers: err.headers, body: JSON.stringify(errorBody(err, res.locals.requestId as string | undefined)) };
    }
    throw err;
  }
}

function sendOutcome(res: Response, outcome: Outcome, replayed: boolean): void {
  for (const [k, v] of Object.entries(outcome.headers)) res.setHeader(k, v);
  res.setHeader(IDEMPOTENCY_REPLAY_HEADER, replayed ? "true" : "false");
  sendJsonText(res, outcome.status, outcome.body);
}

/** a body that is still a promise is a handler that forgot an await: fail loudly, never serialize it as {} */
export function settledResult(result: HandlerResult): HandlerResult {
  if (result.body instanceof Promise) throw new Error("handler returned an unsettled promise as its body (a missing await)");
  return result;
}

export function registerRoute<B, Q, P>(
  router: RouteSink,
  registry: OpenAPIRegistry,
  table: RouteTable,
  spec: RouteSpec<B, Q, P>,
  hooks: RouteHooks = {},
): void {
  // a declaration that contradicts itself is refused before anything of it is registered
  const route = `${spec.method.toUpperCase()} ${spec.path}`;
  if (spec.security === "bearer_or_x402" && !spec.price) throw new Error(`${route} accepts x402 but declares no price: add one, or declare it bearer-only`);
  if (spec.price && spec.security !== "bearer_or_x402") throw new Error(`${route} declares a price but does not accept x402 (security bearer_or_x402)`);
  if (spec.idempotencyKey && !hooks.idempotency) throw new Error(`${spec.path} needs the idempotency store`);
  if (spec.storeOnly && !(spec.idempotencyKey && hooks.transaction)) throw new Error(`${route} declares storeOnly: it needs an Idempotency-Key and the database's transactions`);
  if (spec.price) hooks.prices?.add({ method: spec.method.toUpperCase() as "GET" | "POST", path: spec.path, ...spec.price, ...(spec.tool ? { tool: spec.tool.name } : {}) });
  if (spec.tool) table.addTool(spec);
  table.add(spec.path, spec.method);
  table.declare(spec);
  if (!spec.internal) registry.registerPath(openApiConfig(spec));
  if (spec.security === "bearer_or_x402" && hooks.catalog) {
    hooks.catalog.add({
      method: spec.method.toUpperCase() as "GET" | "POST",
      path: spec.path,
      body: spec.request?.body,
      query: spec.request?.query,
      outputs: Object.entries(spec.responses).flatMap(([status, r]) => (/^2\d\d$/.test(status) && r.schema ? [r.schema] : [])),
      example: spec.request?.example,
    });
  }

  const parsed = (req: Request, res: Response): HandlerContext<B, Q, P> => {
    const body = spec.request?.body ? parse(spec.request.body, bodyOf(req, spec.request.bodyRequired ?? true), "body") : (undefined as B);
    const query = spec.request?.query ? parse(spec.request.query, req.query, "query") : (undefined as Q);
    const params = spec.request?.params ? parse(spec.request.params, req.params, "path") : (undefined as P);
    return { req, res, body, query, params };
  };
  const now = hooks.now ?? (() => new Date());
  /** who holds a claimed slot: generated here, once per request (never the client's X-Request-Id) */
  const holderOf = (res: Response): string => (res.locals.slotHolder ??= newHolder("slot")) as string;

  /** reserve (checks + slot), run the handler, release: the body of every state-changing call */
  const runReserved = async (req: Request, res: Response): Promise<HandlerResult> => {
    const c = parsed(req, res);
    if (!spec.reserve) return spec.handler(c);
    const release = await spec.reserve(c, holderOf(res));
    try {
      return await spec.handler(c);
    } finally {
      await release();
    }
  };

  const scopeOf = async (req: Request, res: Response): Promise<string> => {
    const credential = res.locals.credential as { scope: string } | undefined;
    if (credential) return credential.scope;
    if (spec.idempotencyScope) return spec.idempotencyScope(parsed(req, res));
    return "public";
  };

  /** the request's parsed context when the route says it is store-only; a request it cannot say that of (invalid, refused) takes the ordinary path, which answers it */
  const storeOnlyContext = async (req: Request, res: Response): Promise<HandlerContext<B, Q, P> | undefined> => {
    if (!spec.storeOnly) return undefined;
    try {
      const c = parsed(req, res);
      return (await spec.storeOnly(c)) ? c : undefined;
    } catch {
      return undefined;
    }
  };

  /** bearer (or no credential): the shared idempotency guard around reserve + handler, or one transaction for a storeOnly request */
  const runIdempotent = async (req: Request, res: Response): Promise<void> => {
    const call = { scope: await scopeOf(req, res), key: req.header("idempotency-key"), fingerprint: requestFingerprint(`${req.method} ${req.path}`, req.body), now: now(), clock: now };
    const atomic = await storeOnlyContext(req, res);
    const outcome = atomic
      ? await hooks.transaction!(() => idempotent(hooks.idempotency!, { ...call, leased: false }, () => outcomeOf(res, async () => spec.handler(atomic)))).catch((err: unknown) => {
          // nothing was written: the store kept colliding with other requests (PostgreSQL, after its retries)
          if (isContention(err)) throw new TreasuryError("conflicting_operation", "another request of this treasury was being applied at the same moment; retry (nothing was done)", {}, { "Retry-After": "1" });
          throw err;
        })
      : await idempotent(hooks.idempotency!, { ...call, renewAlso: () => hooks.renewReservations?.(holderOf(res)) ?? Promise.resolve() }, () => outcomeOf(res, () => runReserved(req, res)));
    sendOutcome(res, outcome, outcome.replayed);
  };

  /**
   * x402 on a state-changing route, in the order that charges exactly once:
   * claim the Idempotency-Key, run every check and claim the treasury's slot,
   * settle, execute. A request that is replayed, refused or conflicted is
   * never settled (its proof is released); one that was settled but did not
   * execute leaves a prepaid credit on its key, so its retry is not charged.
   */
  const runPaidIdempotent = async (req: Request, res: Response, claim: PaymentClaim): Promise<void> => {
    const store = hooks.idempotency!;
    let keyHolder: string | undefined;
    let charged: { payer: string; nonce: string } | undefined;
    let releaseSlot: (() => Promise<void>) | undefined;
    let creditKept = false;
    const scope = (res.locals.credential as { scope: string }).scope;
    const key = req.header("idempotency-key");
    const fingerprint = requestFingerprint(`${req.method} ${req.path}`, req.body);
    try {
      const checkedKey = checkIdempotencyKey(key);
      const taken = await store.claim(scope, checkedKey, fingerprint, now(), newHolder("req"));
      if (taken.kind === "replay") {
        await claim.release();
        return sendOutcome(res, taken.response, true);
      }
      if (taken.kind === "mismatch") throw new TreasuryError("idempotency_key_reused", "this Idempotency-Key was already used with a different request; use a fresh key");
      if (taken.kind === "in_progress") throw new TreasuryError("idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry shortly (nothing was charged)", {}, { "Retry-After": "1" });
      const holder = (keyHolder = taken.holder);

      await whileLeased(
        () => Promise.all([store.renew(scope, checkedKey, holder, now()), claim.renew(), hooks.renewReservations?.(holderOf(res))]),
        async () => {
          const c = parsed(req, res);
          releaseSlot = spec.reserve ? await spec.reserve(c, holderOf(res)) : undefined;

          const prepaid = await store.takePrepaid(scope, checkedKey, fingerprint);
          // an earlier proof of this key whose settlement's outcome was unknown is settled now (at most once)
          const collected = prepaid ? await hooks.payments!.settlePending(prepaid) : undefined;
          if (collected === "unknown") {
            await store.addPrepaid(scope, checkedKey, fingerprint, prepaid!, now());
            creditKept = true; // the key's credit stays the earlier payment; this proof is released unsettled
            throw settlementUnknown(prepaid!.payer);
          }
          if (prepaid && collected === "settled") {
            await claim.release(); // this request was paid for by an earlier proof that did not execute
            charged = prepaid;
          } else {
            if (!(await claim.settle())) {
              keyHolder = undefined;
              await store.release(scope, checkedKey, holder);
              return;
            }
            charged = { payer: claim.payer, nonce: claim.nonce };
          }

          const outcome = await outcomeOf(res, async () => spec.handler(c));
          if (outcome.status >= 400) {
            // paid, not executed: the retry of this key is free
            await store.addPrepaid(scope, checkedKey, fingerprint, charged, now());
            await store.release(scope, checkedKey, holder);
          } else {
            await store.complete(scope, checkedKey, outcome, holder);
          }
          keyHolder = undefined;
          // the payment that paid for it is spent: this proof's, or the key's credit's
          if (charged.payer.toLowerCase() === claim.payer.toLowerCase() && charged.nonce.toLowerCase() === claim.nonce.toLowerCase()) await claim.outcome(outcome.status);
          else await hooks.payments!.spent(charged, outcome.status);
          sendOutcome(res, outcome, false);
        },
      );
    } catch (err) {
      if (charged) {
        await store.addPrepaid(scope, key!, fingerprint, charged, now());
        await claim.outcome(500); // its value now lives in the prepaid credit
      } else if (err instanceof TreasuryError && err.code === "payment_settlement_unknown" && keyHolder && !creditKept) {
        // maybe charged: the key keeps the payment as its credit, so a retry with a fresh proof settles this one, not both
        await store.addPrepaid(scope, key!, fingerprint, { payer: claim.payer, nonce: claim.nonce }, now());
      } else await claim.release();
      if (keyHolder) await store.release(scope, key!, keyHolder);
      throw err;
    } finally {
      await releaseSlot?.();
    }
  };

  /**
   * x402's payment-identifier (a v2 client's idempotency key for a paid request, scoped to its signer):
   * claimed before the proof is even verified, so a retry with the same identifier (with the same or a
   * fresh proof) gets the first answer and is never charged again, and one sent while the first is still
   * running gets 409 payment_in_progress, never a 402 that would make a conforming client pay twice. The
   * same identifier for another request is 409 payment_identifier_reused. An answer is kept when the
   * request was charged or succeeded; a refusal before settlement frees the identifier.
   */
  const byPaymentIdentifier = async (req: Request, res: Response, payer: string, id: string, pay: () => Promise<void>, authorize: () => Promise<PaymentClaim | null>): Promise<void> => {
    const store = hooks.idempotency!;
    const scope = `x402-payment-identifier:${payer.toLowerCase()}`;
    const fingerprint = requestFingerprint(`${req.method} ${req.path}`, { body: req.body ?? null, query: req.query });
    const holder = newHolder("pid");
    const taken = await store.claim(scope, id, fingerprint, now(), holder);
    if (taken.kind === "replay") {
      // the stored answer goes only to whoever proves to be the payer now: a fresh authorization of the same payer,
      // verified and then released unsettled. A copied proof (public on chain once settled) is refused.
      const fresh = await authorize();
      if (!fresh) return;
      await fresh.release();
      return sendOutcome(res, taken.response, true);
    }
    if (taken.kind === "mismatch") throw new TreasuryError("payment_identifier_reused", "this payment-identifier was already used for a different request; use a fresh id");
    if (taken.kind === "in_progress") {
      throw new TreasuryError("payment_in_progress", "a request with this payment-identifier is still being served; retry after Retry-After seconds with the same id (nothing more is charged)", { retry_after_seconds: 1 }, { "Retry-After": "1" });
    }
    let sent: string | undefined;
    const send = res.send.bind(res);
    res.send = ((body?: unknown) => {
      sent ??= typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : JSON.stringify(body);
      return send(body as never);
    }) as Response["send"];
    try {
      await whileLeased(() => store.renew(scope, id, holder, now()), pay);
    } catch (err) {
      await store.release(scope, id, holder);
      throw err;
    }
    const kept = ["content-type", "x-treasury-id", ...PAYMENT_RESPONSE_HEADER_NAMES];
    const charged = PAYMENT_RESPONSE_HEADER_NAMES.some((h) => res.getHeader(h) !== undefined);
    // answered through sendJson (the routes, errors) or through res.send (x402-express's own answers)
    sent ??= res.locals.sentJson as string | undefined;
    if (sent !== undefined && (charged || (res.statusCode >= 200 && res.statusCode < 300))) {
      const headers = Object.fromEntries(kept.flatMap((h) => (res.getHeader(h) === undefined ? [] : [[h, String(res.getHeader(h))]])));
      await store.complete(scope, id, { status: res.statusCode, headers, body: sent }, holder);
    } else await store.release(scope, id, holder);
  };

  /** x402 on a read: run, then settle; a refusal or failure is never charged */
  const runPaidRead = async (req: Request, res: Response, claim: PaymentClaim): Promise<void> => {
    let result: HandlerResult;
    try {
      result = settledResult(await whileLeased(() => claim.renew(), async () => spec.handler(parsed(req, res))));
    } catch (err) {
      await claim.release();
      throw err;
    }
    if (result.status >= 400) {
      await claim.release();
      sendJson(res, result.status, result.body);
      return;
    }
    if (!(await claim.settle())) return;
    for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
    await claim.outcome(result.status);
    sendJson(res, result.status, result.body);
  };

  router[spec.method](spec.path, async (req, res, next) => {
    try {
      if (spec.security === "bearer_or_x402" || spec.security === "bearer") {
        if (!hooks.authenticate) throw new Error(`${spec.path} needs an authenticator`);
        const signedIn = spec.siwx && !req.header("authorization") && hooks.walletSignature && hasWalletSignature(req);
        // a bearer header decides (a valid key wins over a payment, an invalid one is 401)
        if (signedIn) await hooks.walletSignature!.authenticate(req, res);
        else if (spec.security === "bearer_or_x402" && !req.header("authorization") && hooks.payments?.enabled) {
          const route = { method: spec.method.toUpperCase(), path: spec.path };
          if (!hasPayment(req)) return await hooks.payments.challenge(req, res, route, spec.siwx && hooks.walletSignature ? { [SIWX_EXTENSION_KEY]: hooks.walletSignature.challenge(req) } : {});
          const pay = async () => {
            const claim = await hooks.payments!.authorize(req, res, route);
            if (!claim) return;
            if (spec.idempotencyKey) return await runPaidIdempotent(req, res, claim);
            return await runPaidRead(req, res, claim);
          };
          const pid = paymentIdentifier(paymentOf((n) => req.header(n))?.decoded);
          if (pid && "invalid" in pid) throw new TreasuryError("invalid_payment_identifier", pid.invalid);
          const payer = pid ? await hooks.payments.verifiedPayer((n) => req.header(n)) : undefined;
          // an unsigned or forged proof goes the normal way (and is refused there): only a signer's identifier is honoured
          if (pid && payer) return await byPaymentIdentifier(req, res, payer, pid.id, pay, () => hooks.payments!.authorize(req, res, route));
          return await pay();
        } else if (spec.siwx && hooks.walletSignature?.unauthorized && !req.header("authorization")) {
          // x402 off: the way out still opens with the wallet's own signature
          throw hooks.walletSignature.unauthorized(req);
        } else await hooks.authenticate(req, res);
      }
      if (spec.idempotencyKey) return await runIdempotent(req, res);
      const result = settledResult(await runReserved(req, res));
      if (res.headersSent) return;
      for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
      sendJson(res, result.status, result.body);
    } catch (err) {
      next(err);
    }
  });
}

/** does the request carry x402's sign-in-with-x (the wallet's own signature)? */
const hasWalletSignature = (req: Request): boolean => typeof req.header(SIWX_HEADER) === "string";

function bodyOf(req: Request, required: boolean): unknown {
  // body-parser marks a request whose body it parsed with `_body`
  const parsed = (req as Request & { _body?: boolean })._body === true;
  if (!parsed) {
    if (required) throw new TreasuryError("invalid_request", "a JSON body is required");
    return {};
  }
  return req.body;
}

function parse<T>(schema: ZodType<T>, value: unknown, where: "body" | "query" | "path"): T {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, where, value);
  return result.data;
}

function openApiConfig(spec: RouteSpec<any, any, any>): RouteConfig {
  const responses: Record<number, ResponseConfig> = {};
  const all: Record<number, ResponseSpec> =
    spec.security === "bearer_or_x402"
      ? {
          402: {
            description:
              "payment required: an x402 version 1 challenge in the body (accepts) and the same requirements in x402 version 2's PAYMENT-REQUIRED header when no credential is sent, or a refused payment (both again), its reason in `error`: the facilitator's verdict (e.g. invalid_exact_evm_payload_signature), a mismatch with this route's requirements, invalid_payment (a proof the facilitator refused as malformed; its reason code in `reason`), settlement_failed (nothing charged), or payment_already_used (a spent proof proves nothing: to get the stored answer of a request whose answer was lost, retry with the same Idempotency-Key or payment-identifier and a fresh proof, which is verified and released unsettled)",
            schema: X402Challenge,
            headers: {
              "PAYMENT-REQUIRED": { description: "x402 version 2: base64 of the PaymentRequired JSON (x402Version 2, error, resource, accepts with CAIP-2 network eip155:84532 and `amount`)", schema: { type: "string" as const } },
              "WWW-Authenticate": { description: "the credentials this route takes: Bearer, x402 v1 (X-PAYMENT), x402 v2 (PAYMENT-SIGNATURE)", schema: { type: "string" as const } },
            },
          },
          ...spec.responses,
          ...PAYMENT_RESPONSES(spec.responses),
        }
      : spec.responses;
  for (const [status, r] of Object.entries(all)) {
    const settled = spec.security === "bearer_or_x402" && Number(status) < 300 ? PAYMENT_RESPONSE_HEADERS : {};
    responses[Number(status)] = {
      description: r.description,
      headers: { ...RATE_LIMIT_HEADERS, ...settled, ...(r.headers ?? {}) },
      ...(r.schema ? { content: { "application/json": { schema: r.schema } } } : {}),
    };
  }
  const headers = spec.idempotencyKey
    ? z.object({
        "Idempotency-Key": IdempotencyKey,
      })
    : undefined;
  const config: RouteConfig = {
    method: spec.method,
    path: toOpenApiPath(spec.path),
    operationId: spec.operationId,
    summary: spec.summary,
    description: spec.description,
    tags: spec.tags,
    security:
      spec.security === "bearer_or_x402"
        ? [{ bearerAuth: [] }, { x402Payment: [] }, { x402PaymentV2: [] }, ...(spec.siwx ? [{ signInWithX: [] }] : [])]
        : spec.security === "bearer"
          ? [{ bearerAuth: [] }]
          : spec.security === "admin"
            ? [{ adminToken: [] }]
            : [],
    request: {
      ...(spec.request?.body
        ? { body: { required: spec.request.bodyRequired ?? true, content: { "application/json": { schema: spec.request.body, ...(spec.request.example === undefined ? {} : { example: spec.request.example }) } } } }
        : {}),
      ...(spec.request?.query ? { query: spec.request.query as never } : {}),
      ...(spec.request?.params ? { params: spec.request.params as never } : {}),
      ...(headers ? { headers } : {}),
    },
    responses,
  };
  if (spec.extension) (config as Record<string, unknown>)["x-extension"] = true;
  return config;
}
