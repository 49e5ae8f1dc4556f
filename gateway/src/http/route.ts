/**
 * One declaration per endpoint: the same zod schemas validate the request at
 * the edge and describe it in the OpenAPI document, so the two cannot drift.
 */
import type { OpenAPIRegistry, ResponseConfig, RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { Request, Response, Router } from "express";
import type { ZodType } from "zod";
import { z } from "../schemas/zod";
import { idempotent, requestFingerprint } from "../services/idempotency";
import type { IdempotencyStore } from "../store/idempotency-store";
import type { PaymentGate } from "../x402/payment-gate";
import { ApiError, errorBody, fromZodError } from "./errors";

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

export type Security = "none" | "bearer_or_x402" | "admin";

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
  request?: { body?: ZodType<B>; bodyRequired?: boolean; query?: ZodType<Q>; params?: ZodType<P> };
  responses: Record<number, ResponseSpec>;
  /**
   * State-changing routes paid with x402: throws the typed error the request
   * would end in, writing nothing, so a payment is settled only for a request
   * that will execute.
   */
  precheck?: (ctx: HandlerContext<B, Q, P>) => Promise<void> | void;
  handler: (ctx: HandlerContext<B, Q, P>) => Promise<HandlerResult> | HandlerResult;
}

export const toOpenApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_]+)/g, "{$1}");

/** Tracks which methods exist per path so unsupported ones answer 405. */
export class RouteTable {
  private readonly methods = new Map<string, Set<string>>();
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
  })
  .passthrough()
  .openapi("X402Challenge");

/** What routes need from the outside: authentication and the idempotency store. */
export interface RouteHooks {
  /** sets res.locals.credential or throws a typed 401/403 */
  authenticate?: (req: Request, res: Response) => Promise<void> | void;
  /** the x402 credential: challenge without a credential, pay-per-request with X-PAYMENT */
  payments?: PaymentGate;
  idempotency?: IdempotencyStore;
  now?: () => Date;
}

export const IDEMPOTENCY_REPLAY_HEADER = "Idempotent-Replayed";

export function registerRoute<B, Q, P>(
  router: Router,
  registry: OpenAPIRegistry,
  table: RouteTable,
  spec: RouteSpec<B, Q, P>,
  hooks: RouteHooks = {},
): void {
  table.add(spec.path, spec.method);
  if (!spec.internal) registry.registerPath(openApiConfig(spec));

  const parsed = (req: Request, res: Response): HandlerContext<B, Q, P> => {
    const body = spec.request?.body ? parse(spec.request.body, bodyOf(req, spec.request.bodyRequired ?? true), "body") : (undefined as B);
    const query = spec.request?.query ? parse(spec.request.query, req.query, "query") : (undefined as Q);
    const params = spec.request?.params ? parse(spec.request.params, req.params, "path") : (undefined as P);
    return { req, res, body, query, params };
  };
  const run = async (req: Request, res: Response): Promise<HandlerResult> => spec.handler(parsed(req, res));
  const now = hooks.now ?? (() => new Date());
  const runNormal = async (req: Request, res: Response): Promise<void> => {
    if (spec.idempotencyKey) {
      if (!hooks.idempotency) throw new Error(`${spec.path} needs the idempotency store`);
      await runIdempotent(req, res, hooks.idempotency, now, () => run(req, res));
      return;
    }
    const result = await run(req, res);
    if (res.headersSent) return;
    for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
    res.status(result.status).json(result.body);
  };

  router[spec.method](spec.path, async (req, res, next) => {
    try {
      if (spec.security === "bearer_or_x402") {
        if (!hooks.authenticate) throw new Error(`${spec.path} needs an authenticator`);
        // a bearer header decides (a valid key wins over a payment, an invalid one is 401)
        if (!req.header("authorization") && hooks.payments?.enabled) {
          if (!req.header("x-payment")) {
            await hooks.payments.challenge(req, res);
            return;
          }
          await hooks.payments.handle(
            req,
            res,
            { method: spec.method.toUpperCase(), path: spec.path, stateChanging: Boolean(spec.idempotencyKey) },
            {
              precheck: async () => {
                await spec.precheck?.(parsed(req, res));
              },
              idempotencyTaken: () => idempotencyTaken(req, res, hooks, now),
              runNormal: () => runNormal(req, res),
              runCaptured: () => run(req, res),
            },
          );
          return;
        }
        await hooks.authenticate(req, res);
      }
      if (spec.idempotencyKey) {
        await runNormal(req, res);
        return;
      }
      const result = await run(req, res);
      if (res.headersSent) return;
      for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
      res.status(result.status).json(result.body);
    } catch (err) {
      next(err);
    }
  });
}

/** would this request's Idempotency-Key replay or refuse rather than execute? (nothing is claimed) */
function idempotencyTaken(req: Request, res: Response, hooks: RouteHooks, now: () => Date): boolean {
  const key = req.header("idempotency-key");
  if (!hooks.idempotency || key === undefined || key.length < 8 || key.length > 120) return true;
  const scope = (res.locals.credential as { scope: string } | undefined)?.scope ?? "public";
  return hooks.idempotency.peek(scope, key, requestFingerprint(`${req.method} ${req.path}`, req.body), now()).kind !== "claimed";
}

/** REST side of the shared idempotency guard (services/idempotency.ts). */
async function runIdempotent(req: Request, res: Response, store: IdempotencyStore, now: () => Date, run: () => Promise<HandlerResult>): Promise<void> {
  const credential = res.locals.credential as { scope: string } | undefined;
  const outcome = await idempotent(
    store,
    { scope: credential?.scope ?? "public", key: req.header("idempotency-key"), fingerprint: requestFingerprint(`${req.method} ${req.path}`, req.body), now: now() },
    async () => {
      try {
        const result = await run();
        return { status: result.status, headers: result.headers ?? {}, body: JSON.stringify(result.body) };
      } catch (err) {
        if (err instanceof ApiError && err.status < 500) {
          return { status: err.status, headers: err.headers, body: JSON.stringify(errorBody(err, res.locals.requestId as string | undefined)) };
        }
        throw err;
      }
    },
  );
  for (const [k, v] of Object.entries(outcome.headers)) res.setHeader(k, v);
  res.setHeader(IDEMPOTENCY_REPLAY_HEADER, outcome.replayed ? "true" : "false");
  res.status(outcome.status).type("application/json").send(outcome.body);
}

function bodyOf(req: Request, required: boolean): unknown {
  // body-parser marks a request whose body it parsed with `_body`
  const parsed = (req as Request & { _body?: boolean })._body === true;
  if (!parsed) {
    if (required) throw new ApiError(400, "invalid_request", "a JSON body is required");
    return {};
  }
  return req.body;
}

function parse<T>(schema: ZodType<T>, value: unknown, where: "body" | "query" | "path"): T {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, where);
  return result.data;
}

function openApiConfig(spec: RouteSpec<any, any, any>): RouteConfig {
  const responses: Record<number, ResponseConfig> = {};
  const all: Record<number, ResponseSpec> =
    spec.security === "bearer_or_x402"
      ? { 402: { description: "payment required: an x402 version 1 challenge (accepts) when no credential is sent, or a refused payment", schema: X402Challenge }, ...spec.responses }
      : spec.responses;
  for (const [status, r] of Object.entries(all)) {
    responses[Number(status)] = {
      description: r.description,
      headers: { ...RATE_LIMIT_HEADERS, ...(r.headers ?? {}) },
      ...(r.schema ? { content: { "application/json": { schema: r.schema } } } : {}),
    };
  }
  const headers = spec.idempotencyKey
    ? z.object({
        "Idempotency-Key": z.string().min(8).max(120).openapi({ description: "unique per state-changing call (8 to 120 characters)" }),
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
      spec.security === "bearer_or_x402" ? [{ bearerAuth: [] }, { x402Payment: [] }] : spec.security === "admin" ? [{ adminToken: [] }] : [],
    request: {
      ...(spec.request?.body
        ? { body: { required: spec.request.bodyRequired ?? true, content: { "application/json": { schema: spec.request.body } } } }
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
