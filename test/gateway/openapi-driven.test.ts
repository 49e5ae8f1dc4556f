/**
 * Requests generated from the served OpenAPI document, for every operation
 * (admin routes aside): bodies, query, path and header parameters drawn from
 * their schemas (test/helpers/schema-sample.ts, which honours the document's
 * `x-` rules). Each must be accepted as input (never a 400 `invalid_request`:
 * a refusal for a rule the document does not state), and every response must
 * be documented for its operation and match its schema. State-dependent
 * answers (404 unknown ids, 409 conflicts, 403 the safety rail, 400 state
 * codes such as `no_debt`) are fine as long as they are documented.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { SchemaSampler, seeded } from "../helpers/schema-sample";

const SAMPLES = Number(process.env.OPENAPI_SAMPLES ?? 25);
let gw: TestGateway;
let doc: any;
let validator: ResponseValidator;
let bearer: string;

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
  validator = new ResponseValidator(doc);
  bearer = (await call(gw.url, "POST", "/api/v1/sandbox/keys")).body.key;
});
afterAll(async () => {
  await gw?.close();
});

function operations(): [string, string, any][] {
  const ops: [string, string, any][] = [];
  for (const [path, methods] of Object.entries<any>(doc.paths)) {
    if (path.startsWith("/admin")) continue;
    for (const [method, op] of Object.entries<any>(methods)) ops.push([method.toUpperCase(), path, op]);
  }
  return ops;
}

describe("every operation with requests generated from /openapi.json", () => {
  it("accepts every documented-valid input and answers only documented responses", async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(30);
    const failures: string[] = [];
    let sent = 0;
    for (const [i, [method, template, op]] of ops.entries()) {
      for (let n = 0; n < SAMPLES; n++) {
        const seed = i * 1000 + n;
        const sampler = new SchemaSampler(doc, seeded(seed));
        let path = template;
        const query = new URLSearchParams();
        const headers: Record<string, string> = {};
        for (const p of op.parameters ?? []) {
          if (!p.required && sampler.sample({ type: "boolean" }) === false) continue;
          const value = String(sampler.sample(p.schema ?? { type: "string" }));
          if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(value));
          else if (p.in === "query") query.set(p.name, value);
          else if (p.in === "header") headers[p.name.toLowerCase()] = value;
        }
        const schemes = (op.security ?? []).flatMap((s: Record<string, unknown>) => Object.keys(s));
        if (schemes.includes("bearerAuth")) headers.authorization = `Bearer ${bearer}`;
        const bodySchema = op.requestBody?.content?.["application/json"]?.schema;
        const body = bodySchema ? sampler.sample(bodySchema) : undefined;
        const concrete = `${path}${query.size ? `?${query}` : ""}`;
        const r = await call(gw.url, method, concrete, { body, headers });
        sent++;
        const what = `${method} ${concrete} (seed ${seed}) ${body === undefined ? "" : JSON.stringify(body)} -> ${r.status} ${r.text.slice(0, 300)}`;
        if (r.status === 400 && r.body?.error === "invalid_request") failures.push(`refused as invalid: ${what}`);
        if (r.status === 500) failures.push(`server error: ${what}`);
        try {
          validator.check(method, concrete, r.status, r.body);
        } catch (err) {
          failures.push(`undocumented response: ${what}\n  ${(err as Error).message.split("\n").slice(0, 4).join("\n  ")}`);
        }
      }
    }
    expect(sent).toBe(ops.length * SAMPLES);
    expect(failures, failures.slice(0, 8).join("\n\n")).toEqual([]);
  }, 120_000);
});
