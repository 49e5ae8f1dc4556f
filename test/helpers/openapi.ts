/**
 * Validate real responses against the served OpenAPI document (Ajv, JSON
 * Schema 2020-12), and the document itself against the OpenAPI 3.1 schema.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { expect } from "vitest";
import { call, startTestGateway } from "./gateway";

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };

export async function validateDocument(doc: unknown): Promise<{ valid: boolean; errors: unknown }> {
  const validator = new Validator();
  const result = await validator.validate(doc as Parameters<Validator["validate"]>[0]);
  return { valid: result.valid, errors: result.errors };
}

const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

export class ResponseValidator {
  private readonly ajv: Ajv2020;
  constructor(private readonly doc: Doc) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(doc as object, "openapi.json");
  }

  /** does the document's schema at `pointer` (a JSON pointer within it, `#/components/schemas/...`) allow `value` */
  allows(pointer: string, value: unknown): boolean {
    const ref = `openapi.json${pointer}`;
    const validate = this.ajv.getSchema(ref) ?? this.ajv.compile({ $ref: ref });
    return validate(value) as boolean;
  }

  /** the path template of the document that matches a concrete path */
  template(concrete: string): string {
    const pathOnly = concrete.split("?")[0]!;
    for (const t of Object.keys(this.doc.paths)) {
      const re = new RegExp(`^${t.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      if (re.test(pathOnly)) return t;
    }
    throw new Error(`no OpenAPI path matches ${concrete}`);
  }

  /** asserts that `body` with `status` is a documented response of method+path and matches its schema */
  check(method: string, concretePath: string, status: number, body: unknown): void {
    const t = this.template(concretePath);
    const op = this.doc.paths[t]?.[method.toLowerCase()];
    expect(op, `${method} ${t} is documented`).toBeDefined();
    const response = op!.responses[String(status)];
    expect(response, `${method} ${t} documents status ${status}`).toBeDefined();
    const content = response!.content?.["application/json"];
    // a documented status without a body schema may only answer without a JSON body
    if (!content) {
      expect(body, `${method} ${t} ${status} returns a body its documentation does not describe`).toBeUndefined();
      return;
    }
    const ref = `openapi.json#/paths/${esc(t)}/${method.toLowerCase()}/responses/${status}/content/${esc("application/json")}/schema`;
    const validate = this.ajv.getSchema(ref) ?? this.ajv.compile({ $ref: ref });
    const ok = validate(body);
    expect(ok, `${method} ${concretePath} ${status} matches the OpenAPI schema: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
}

/** a gateway for a test file, with a caller that validates every response against /openapi.json */
export async function startValidatedGateway(env: Record<string, string> = {}, opts: Parameters<typeof startTestGateway>[1] = {}) {
  const gw = await startTestGateway(env, opts);
  const v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
  const req = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await call(gw.url, method, path, { ...(body === undefined ? {} : { body }), headers });
    v.check(method, path, r.status, r.body);
    return r;
  };
  return { gw, v, req };
}
