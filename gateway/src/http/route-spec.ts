/**
 * The declaration of an endpoint (`RouteSpec`), and what registering it needs from the outside
 * (`RouteHooks`). One declaration gives the REST route (http/route.ts and its request stages,
 * http/stages/), the OpenAPI operation, the x402 price and bazaar entry (http/declaration/) and the MCP
 * tool (mcp/tools.ts); the same zod schemas validate the request at the edge and describe it, so the two
 * cannot drift.
 */
import type { Request, Response } from "express";
import type { ZodType } from "zod";
import type { ErrorCode } from "@treasury/core/lib/errors";
import { z } from "@treasury/core/schemas/zod";
import type { IdempotencyStore } from "../store/idempotency-store";
import type { BazaarCatalog } from "../x402/bazaar";
import type { PaymentGate } from "../x402/payment-gate";
import type { Meter, PriceList } from "../x402/prices";
import type { PaidAnswers } from "../x402/receipts/paid-answers";

export type Method = "get" | "post" | "delete";

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
  /**
   * An answer that is a stream (Server-Sent Events): written by `stream` once the request passed every stage
   * (paid for, when it is paid), in place of `body`. It resolves when the stream ended.
   */
  stream?: (res: Response) => Promise<void>;
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
  /** a metered route: `atomic` is the most a call costs, x402 `upto` charges what the answer used (x402/prices.ts) */
  meter?: Meter;
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

/** a named request example: what it shows, its body, and the refusal it illustrates (none: it succeeds) */
export interface RequestExample<B> {
  summary: string;
  value: B;
  answers?: { status: number; error: ErrorCode };
}

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
   * A route a wallet must never be kept from by money (a downward leg, a read of its own treasury): it also
   * takes the wallet's own signature, x402's sign-in-with-x (header SIGN-IN-WITH-X), free, for the treasury the
   * wallet stands behind (services/wallet-signature.ts). Its 402 offers the extension beside the price; a
   * key-only route's 401 carries it.
   */
  siwx?: boolean;
  /** the MCP tool this route serves */
  tool?: ToolSpec;
  /**
   * `example`: a request body that succeeds on a fresh service, shown in OpenAPI and in the route's x402
   * bazaar metadata; `examples` (OpenAPI only): named ones, each succeeding or answering the refusal it
   * illustrates (`answers`, the example's `x-answers`). test/gateway/openapi-examples.test.ts plays them.
   */
  request?: { body?: ZodType<B>; bodyRequired?: boolean; query?: ZodType<Q>; params?: ZodType<P>; example?: B; examples?: Record<string, RequestExample<B>> };
  responses: Record<number, ResponseSpec>;
  /**
   * The codes the route's own services answer with (its handler, `reserve`, `storeOnly`), beside those of
   * the request stages it goes through (validation, authentication, rate limit, payment, idempotency: derived,
   * http/declaration/error-codes.ts). Each is listed in the OpenAPI operation under its status, which the
   * route must document.
   */
  errors?: readonly ErrorCode[];
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

/** any route's declaration, whatever its body, query and params */
export type AnyRouteSpec = RouteSpec<any, any, any>;

/** the Idempotency-Key of a state-changing call: the REST header, and the `idempotency_key` argument of its MCP tool */
export { IdempotencyKey } from "../schemas/idempotency-key";

/** What routes need from the outside: authentication and the idempotency store. */
export interface RouteHooks {
  /** sets res.locals.credential or throws a typed 401/403 */
  authenticate?: (req: Request, res: Response) => Promise<void> | void;
  /** the x402 credential: challenge without a credential, pay-per-request with X-PAYMENT */
  payments?: PaymentGate;
  /** x402's offer-receipt extension: signed offers on every 402, a signed receipt on every paid answer */
  receipts?: PaidAnswers;
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
