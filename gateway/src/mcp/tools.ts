/**
 * The MCP tools, derived from the route declarations that name one
 * (`tool` in http/route.ts): the input schema is the route's path parameters
 * and body or query schema (plus `idempotency_key` where the route takes an
 * Idempotency-Key),
 * the output schema the route's documented answers, the annotations its
 * method and flags, the price its x402 price. A tool call is served by the
 * route itself (mcp/rest-twin.ts), so no rule exists twice.
 */
import type { ToolAnnotations } from "@modelcontextprotocol/server";
import type { ZodRawShape, ZodType } from "zod";
import { IdempotencyKey, type RouteSpec } from "../http/route";
import { z } from "@treasury/core/schemas/zod";

/** the REST route a tool stands for */
export interface TwinRoute {
  method: "GET" | "POST";
  path: string;
}

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: ZodRawShape;
  annotations: ToolAnnotations;
  /** needs a credential (a bearer key, or an x402 payment when `paid`) */
  authenticated: boolean;
  /** the REST route that serves it */
  twin: TwinRoute & { idempotencyKey: boolean };
  /** the route that serves it when the MCP request carries a bearer key (else `twin`) */
  keyedTwin?: TwinRoute;
  /** set when the twin has an x402 price: the tool can be paid for instead of called with a key; `siwx`: or signed in by the wallet (a downward leg) */
  paid?: TwinRoute & { siwx?: boolean };
  /** the shape of a successful result's structuredContent (the twin's documented answers) */
  outputSchema?: z.ZodObject;
}

/** how the twin is named in discovery: `GET /api/v1/health` (and the keyed route, when there is one) */
export const restEquivalent = (t: ToolDefinition): string =>
  t.keyedTwin ? `${t.keyedTwin.method} ${t.keyedTwin.path} (with a key) or ${t.twin.method} ${t.twin.path}` : `${t.twin.method} ${t.twin.path}`;

/** what a refused tool call carries in structuredContent: the typed error body, or x402's PaymentRequired */
const REFUSAL = z.object({
  error: z.string().describe("machine-readable code of a refusal (isError: true)"),
  message: z.string(),
  request_id: z.string(),
  http_status: z.number().int().describe("the HTTP status of the answer (REST twin's, or the refusal's)"),
  idempotent_replayed: z.boolean().describe("the stored answer of an earlier call with the same idempotency key"),
  x402Version: z.literal(2).describe("payment required (isError: true): x402's PaymentRequired"),
  accepts: z.array(z.record(z.string(), z.unknown())),
  resource: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()),
});

/**
 * A tool's outputSchema: every field of its REST twin's documented success answers (a receipt or an
 * envelope...) and of a refusal (the typed error body, x402's PaymentRequired), each optional, a field two
 * of them share typed as either. MCP wants one object schema, and clients check even a refusal's
 * structuredContent against it; an answer that is not an object is carried as `value`.
 */
export function toolOutputSchema(answers: ZodType[]): z.ZodObject | undefined {
  if (answers.length === 0) return undefined;
  const objects = [...answers.map((a) => (a instanceof z.ZodObject ? a : z.object({ value: a }))), REFUSAL];
  const fields = new Map<string, ZodType[]>();
  for (const o of objects) for (const [k, v] of Object.entries(o.shape as Record<string, ZodType>)) fields.set(k, [...(fields.get(k) ?? []), v]);
  const shape = Object.fromEntries(
    [...fields].map(([k, types]) => [k, (types.length === 1 ? types[0]! : z.union(types as [ZodType, ZodType, ...ZodType[]])).optional()]),
  );
  return z.object(shape).passthrough().describe("a success: the REST twin's answer; a refusal (isError): the typed error body, or x402's PaymentRequired");
}

/**
 * A query field as a tool argument: a query arrives as text and its schema parses the text into its type
 * (a pipe from a string); an MCP argument arrives as JSON, so the tool takes the type the pipe ends in
 * (with its bounds), and the call sends it back as text.
 */
function argumentOf(field: ZodType): ZodType {
  const def = (field as unknown as { _zod: { def: { type: string; innerType?: ZodType; out?: ZodType } } })._zod.def;
  if (def.type === "optional" && def.innerType) {
    const inner = argumentOf(def.innerType);
    return inner === def.innerType ? field : inner.optional();
  }
  if (def.type === "pipe" && def.out) return argumentOf(def.out);
  return field;
}

const successes = (spec: RouteSpec<any, any, any>): ZodType[] =>
  Object.entries(spec.responses).flatMap(([status, r]) => (/^2\d\d$/.test(status) && r.schema ? [r.schema] : []));

/** the tool a route declares, derived from that one declaration */
export function toolOf(spec: RouteSpec<any, any, any>, keyed?: RouteSpec<any, any, any>): ToolDefinition {
  const t = spec.tool!;
  const method = spec.method.toUpperCase() as "GET" | "POST";
  const input = method === "POST" ? spec.request?.body : spec.request?.query;
  if (input !== undefined && !(input instanceof z.ZodObject))
    throw new Error(`${method} ${spec.path}: an MCP tool needs an object ${method === "POST" ? "body" : "query"} schema`);
  // path parameters (`:id`) are arguments too; the call puts them back in the path
  const params = spec.request?.params;
  if (params !== undefined && !(params instanceof z.ZodObject)) throw new Error(`${method} ${spec.path}: an MCP tool needs an object params schema`);
  const paramShape = ((params as z.ZodObject | undefined)?.shape ?? {}) as ZodRawShape;
  const inputShape = ((input as z.ZodObject | undefined)?.shape ?? {}) as ZodRawShape;
  const clash = Object.keys(paramShape).find((k) => k in inputShape || k === "idempotency_key");
  if (clash)
    throw new Error(`${method} ${spec.path}: the MCP tool's argument ${clash} is both a path parameter and a ${method === "POST" ? "body" : "query"} field`);
  const readOnly = t.readOnly ?? method === "GET";
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: {
      ...paramShape,
      ...Object.fromEntries(Object.entries(inputShape).map(([k, f]) => [k, method === "GET" ? argumentOf(f as ZodType) : f])),
      ...(spec.idempotencyKey ? { idempotency_key: IdempotencyKey } : {}),
    },
    annotations: {
      readOnlyHint: readOnly,
      destructiveHint: false,
      idempotentHint: t.idempotent ?? (readOnly || spec.idempotencyKey === true),
      openWorldHint: t.openWorld ?? false,
    },
    authenticated: spec.security === "bearer" || spec.security === "bearer_or_x402",
    twin: { method, path: spec.path, idempotencyKey: spec.idempotencyKey === true },
    ...(t.withKey ? { keyedTwin: { method, path: t.withKey } } : {}),
    ...(spec.price ? { paid: { method, path: spec.path, ...(spec.siwx ? { siwx: true } : {}) } } : {}),
    outputSchema: toolOutputSchema([...successes(spec), ...(keyed ? successes(keyed) : [])]),
  };
}

/** every tool, from the routes that declare one (`routes`: every registered declaration, for a keyed twin's answers) */
export function toolsOf(
  tooled: readonly RouteSpec<any, any, any>[],
  routeOf: (method: string, path: string) => RouteSpec<any, any, any> | undefined,
): ToolDefinition[] {
  return tooled.map((spec) => {
    const keyed = spec.tool!.withKey ? routeOf(spec.method, spec.tool!.withKey) : undefined;
    if (spec.tool!.withKey && !keyed) throw new Error(`MCP tool ${spec.tool!.name}: no ${spec.method.toUpperCase()} ${spec.tool!.withKey} route`);
    return toolOf(spec, keyed);
  });
}
