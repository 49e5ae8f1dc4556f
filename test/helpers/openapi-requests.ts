/**
 * Requests an OpenAPI operation allows, drawn from the served document (schema-sample.ts), and the test
 * of an answer: a request the document allows may be refused by the state it meets (an unknown id, a
 * balance, a payment, a proof that does not verify), never for its form.
 */
import fc from "fast-check";
import type { JsonResponse } from "./gateway";
import { SchemaArbitraries } from "./schema-sample";

export interface Operation {
  method: string;
  template: string;
  op: Record<string, any>;
}

export interface DrawnRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** every operation of the document (the admin API aside) */
export function operations(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  return Object.entries(doc.paths)
    .filter(([template]) => !template.startsWith("/admin"))
    .flatMap(([template, methods]) => Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), template, op })));
}

export const securitySchemes = (op: Record<string, any>): string[] => (op.security ?? []).flatMap((s: Record<string, unknown>) => Object.keys(s));

/** any request `o` allows: its parameters (the optional ones or not) and body drawn from their schemas */
export function requestArbitrary(doc: object, o: Operation, auth: { bearer?: string } = {}): fc.Arbitrary<DrawnRequest> {
  const arbs = new SchemaArbitraries(doc);
  const params: any[] = o.op.parameters ?? [];
  const values = params.map((p) => {
    const value = arbs.of(p.schema ?? { type: "string" }).map(String);
    return p.required ? value : fc.option(value, { nil: undefined });
  });
  const bodySchema = o.op.requestBody?.content?.["application/json"]?.schema;
  const body = bodySchema ? arbs.of(bodySchema) : fc.constant(undefined);
  return fc.tuple(fc.tuple(...values), body).map(([drawn, b]) => {
    let path = o.template;
    const query = new URLSearchParams();
    const headers: Record<string, string> = {};
    params.forEach((p, i) => {
      const v = drawn[i];
      if (v === undefined) return;
      if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(v));
      else if (p.in === "query") query.set(p.name, v);
      else if (p.in === "header") headers[p.name.toLowerCase()] = v;
    });
    if (auth.bearer && securitySchemes(o.op).includes("bearerAuth")) headers.authorization = `Bearer ${auth.bearer}`;
    return { method: o.method, path: `${path}${query.size ? `?${query}` : ""}`, headers, body: b };
  });
}

/**
 * Why an answer refuses the request for its form, or undefined: a typed `invalid_request`, or any refusal
 * that states a rule of form (the service's "... must be ..."), whatever its code.
 */
export function refusedAsMalformed(r: JsonResponse): string | undefined {
  if (r.status < 400 || r.status >= 500) return undefined;
  const message = typeof r.body?.message === "string" ? r.body.message : "";
  if (r.body?.error === "invalid_request") return `invalid_request: ${message}`;
  if (/\bmust be\b/.test(message)) return `${r.body?.error}: ${message}`;
  return undefined;
}
