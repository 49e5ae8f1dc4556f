/**
 * Validation: the request's body, query and path parameters parsed with the route's own zod schemas
 * (those its OpenAPI operation shows), or a typed 400 invalid_request naming the field. It runs where a
 * stage first needs the request's input, not up front: a payer without a proof gets its 402, a paid write
 * claims its Idempotency-Key before its body is judged, as the x402 order says.
 */
import type { Request, Response } from "express";
import type { ZodType } from "zod";
import { TreasuryError, type ErrorCode } from "@treasury/core/lib/errors";
import { fromZodError } from "../errors";
import type { AnyRouteSpec, HandlerContext } from "../route-spec";

/** the codes validation answers with: on a route that takes any input */
export const validationErrors = (spec: AnyRouteSpec): readonly ErrorCode[] =>
  spec.request?.body || spec.request?.query || spec.request?.params ? ["invalid_request"] : [];

/** the handler's context: the request's input, parsed, or a typed invalid_request */
export function handlerContext<B, Q, P>(spec: AnyRouteSpec, req: Request, res: Response): HandlerContext<B, Q, P> {
  const body = spec.request?.body ? parse(spec.request.body, bodyOf(req, spec.request.bodyRequired ?? true), "body") : undefined;
  const query = spec.request?.query ? parse(spec.request.query, req.query, "query") : undefined;
  const params = spec.request?.params ? parse(spec.request.params, req.params, "path") : undefined;
  return { req, res, body: body as B, query: query as Q, params: params as P };
}

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
