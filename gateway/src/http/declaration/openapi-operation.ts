/**
 * A route's OpenAPI operation, from its declaration: its request (body, query, path, the Idempotency-Key
 * header), its security, and its answers: the documented ones, those x402 adds (payment-responses.ts),
 * each with the rate-limit headers and, for an error status, the codes it can carry (`x-error-codes`,
 * error-codes.ts).
 */
import type { ResponseConfig, RouteConfig } from "@asteasolutions/zod-to-openapi";
import { z } from "@treasury/core/schemas/zod";
import { IdempotencyKey, type AnyRouteSpec, type ResponseSpec } from "../route-spec";
import { errorCodesByStatus } from "./error-codes";
import { PAYMENT_REQUIRED, PAYMENT_RESPONSE_HEADERS, paymentResponses } from "./payment-responses";

export const toOpenApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_]+)/g, "{$1}");

const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Remaining": { description: "requests left in the current window", schema: { type: "integer" as const } },
  "X-RateLimit-Reset": { description: "when the window resets (Unix time, seconds)", schema: { type: "integer" as const } },
  "X-Request-Id": { description: "request identifier, also in error bodies", schema: { type: "string" as const } },
};

/** every answer of the operation by status: the route's own, and on a priced route the 402 and the payment refusals */
export const operationResponses = (spec: AnyRouteSpec): Record<number, ResponseSpec> =>
  spec.security === "bearer_or_x402" ? { 402: PAYMENT_REQUIRED, ...spec.responses, ...paymentResponses(spec.responses) } : spec.responses;

/** the body's `example`, or its named `examples` (each with the refusal it illustrates as `x-answers`) */
function requestExamples(spec: AnyRouteSpec): Record<string, unknown> {
  if (spec.request?.example !== undefined) return { example: spec.request.example };
  const named = spec.request?.examples;
  if (!named) return {};
  return {
    examples: Object.fromEntries(
      Object.entries(named).map(([name, e]) => [name, { summary: e.summary, value: e.value, ...(e.answers ? { "x-answers": e.answers } : {}) }]),
    ),
  };
}

export function openApiOperation(spec: AnyRouteSpec): RouteConfig {
  const responses: Record<number, ResponseConfig> = {};
  const codes = errorCodesByStatus(spec);
  for (const [status, r] of Object.entries(operationResponses(spec))) {
    const settled = spec.security === "bearer_or_x402" && Number(status) < 300 ? PAYMENT_RESPONSE_HEADERS : {};
    const errorCodes = codes.get(Number(status));
    responses[Number(status)] = {
      description: r.description,
      headers: { ...RATE_LIMIT_HEADERS, ...settled, ...(r.headers ?? {}) },
      ...(r.schema ? { content: { "application/json": { schema: r.schema } } } : {}),
      ...(errorCodes ? { "x-error-codes": errorCodes } : {}),
    };
  }
  const headers = spec.idempotencyKey ? z.object({ "Idempotency-Key": IdempotencyKey }) : undefined;
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
          ? [{ bearerAuth: [] }, ...(spec.siwx ? [{ signInWithX: [] }] : [])]
          : spec.security === "admin"
            ? [{ adminToken: [] }]
            : [],
    request: {
      ...(spec.request?.body
        ? {
            body: {
              required: spec.request.bodyRequired ?? true,
              content: { "application/json": { schema: spec.request.body, ...requestExamples(spec) } },
            },
          }
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
