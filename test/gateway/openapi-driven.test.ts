/**
 * Requests drawn from the served OpenAPI document, for every operation (admin routes aside): any body,
 * query, path and header values their schemas allow (fast-check over the document: patterns, formats,
 * lengths, bounds, enums and the `x-` rules; test/helpers/schema-sample.ts). A request the document
 * allows may be refused by the state it meets (404 unknown ids, 409 conflicts, 403 the safety rail,
 * 401 a proof that does not verify, 400 state codes such as `no_debt`), never for its form (a typed
 * `invalid_request`, or a refusal stating a rule of form), never with a 500; every answer is documented
 * for its operation and matches its schema. A failure names the operation, fast-check's seed and the
 * smallest request it found.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { operations, refusedAsMalformed, requestArbitrary, type DrawnRequest } from "../helpers/openapi-requests";

const SAMPLES = Number(process.env.OPENAPI_SAMPLES ?? 20);
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

/** what is wrong with the answer to `req`, or undefined */
async function play(req: DrawnRequest): Promise<string | undefined> {
  const r = await call(gw.url, req.method, req.path, { body: req.body, headers: req.headers });
  const what = `${req.method} ${req.path} ${JSON.stringify(req.headers)} ${req.body === undefined ? "" : JSON.stringify(req.body)} -> ${r.status} ${r.text.slice(0, 300)}`;
  const malformed = refusedAsMalformed(r);
  if (malformed) return `refused for its form (${malformed}): ${what}`;
  if (r.status === 500) return `server error: ${what}`;
  try {
    validator.check(req.method, req.path, r.status, r.body);
  } catch (err) {
    return `undocumented answer: ${what}\n  ${(err as Error).message.split("\n").slice(0, 4).join("\n  ")}`;
  }
  return undefined;
}

describe("every operation with requests drawn from /openapi.json", () => {
  it("refuses a request the document allows only for the state it meets, and answers as documented", async () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(30);
    const failures: string[] = [];
    let sent = 0;
    for (const [i, o] of ops.entries()) {
      let problem: string | undefined;
      const details = await fc.check(
        fc.asyncProperty(requestArbitrary(doc, o, { bearer }), async (req) => {
          sent++;
          problem = await play(req);
          return problem === undefined;
        }),
        { numRuns: SAMPLES, seed: 4242 + i, endOnFailure: !process.env.OPENAPI_SHRINK },
      );
      if (details.failed)
        failures.push(`${o.method} ${o.template} (seed ${details.seed}, path ${details.counterexamplePath}): ${problem ?? String(details.errorInstance)}`);
    }
    expect(sent).toBeGreaterThanOrEqual(ops.length * SAMPLES - failures.length * SAMPLES);
    expect(failures, failures.slice(0, 8).join("\n\n")).toEqual([]);
  }, 120_000);
});
