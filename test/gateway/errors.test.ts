import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES } from "@treasury/core/lib/errors";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ BODY_LIMIT_BYTES: "2048" });
});
afterAll(() => gw.close());

const expectTyped = (r: { status: number; body: any; headers: Headers }, status: number, code?: string) => {
  expect(r.status).toBe(status);
  expect(typeof r.body.error).toBe("string");
  expect(typeof r.body.message).toBe("string");
  expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
  if (code) expect(r.body.error).toBe(code);
};

describe("typed errors", () => {
  it("the document's ErrorResponse.error is the closed set of codes", async () => {
    const doc = (await call(gw.url, "GET", "/openapi.json")).body as {
      components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
    };
    expect(doc.components.schemas.ErrorResponse!.properties.error!.enum).toEqual([...ERROR_CODES]);
  });

  it("unknown route: 404", async () => {
    expectTyped(await call(gw.url, "GET", "/api/v1/nothing"), 404, "not_found");
    expectTyped(await call(gw.url, "POST", "/api/v2/public/preview", { body: {} }), 404, "not_found");
  });

  it("malformed JSON: 400 invalid_request", async () => {
    for (const raw of ["{", '{"action": }', "nul", '"just a string"', "42"]) {
      const r = await call(gw.url, "POST", "/api/v1/public/preview", { rawBody: raw, headers: { "content-type": "application/json" } });
      expectTyped(r, 400, "invalid_request");
    }
  });

  it("oversized body: 413", async () => {
    const big = JSON.stringify({ action: "deposit", amount: 1, initiator: "x".repeat(5000) });
    expectTyped(
      await call(gw.url, "POST", "/api/v1/public/preview", { rawBody: big, headers: { "content-type": "application/json" } }),
      413,
      "payload_too_large",
    );
  });

  it("wrong content type: 415", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const r = await call(gw.url, "POST", "/api/v1/treasuries", { rawBody: "wallet_address=0x1", headers: { "content-type": type } });
      expectTyped(r, 415, "unsupported_media_type");
    }
  });

  it("unsupported method on a known path: 405 with Allow", async () => {
    const r = await call(gw.url, "DELETE", "/api/v1/treasuries");
    expectTyped(r, 405, "method_not_allowed");
    expect(r.headers.get("allow")).toBe("GET, HEAD, POST");
    expectTyped(await call(gw.url, "PUT", "/api/v1/public/gateway-status"), 405, "method_not_allowed");
    expectTyped(await call(gw.url, "POST", "/fees.json", { body: {} }), 405, "method_not_allowed");
  });

  it("a body-less POST where a body is required: 400", async () => {
    expectTyped(await call(gw.url, "POST", "/api/v1/treasuries"), 400, "invalid_request");
  });
});

/** Every endpoint, with the shape of input it takes. */
const ENDPOINTS: { method: string; path: string }[] = [
  { method: "GET", path: "/agents.json" },
  { method: "GET", path: "/fees.json" },
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/api/v1/public/market-rates" },
  { method: "GET", path: "/api/v1/public/liquidation-distance" },
  { method: "GET", path: "/api/v1/public/portfolio-state" },
  { method: "GET", path: "/api/v1/public/policy-state" },
  { method: "GET", path: "/api/v1/public/gateway-status" },
  { method: "POST", path: "/api/v1/public/preview" },
  { method: "POST", path: "/api/v1/sandbox/keys" },
  { method: "GET", path: "/api/v1/treasuries" },
  { method: "POST", path: "/api/v1/treasuries" },
  { method: "GET", path: "/api/v1/treasuries/{id}" },
  { method: "GET", path: "/api/v1/agents/apply" },
  { method: "POST", path: "/api/v1/agents/apply" },
  { method: "GET", path: "/api/v1/agents/apply/{id}" },
  { method: "POST", path: "/api/v1/deposits" },
  { method: "POST", path: "/api/v1/convert" },
  { method: "POST", path: "/api/v1/borrow" },
  { method: "POST", path: "/api/v1/repay" },
  { method: "POST", path: "/api/v1/estimate" },
  { method: "POST", path: "/api/v1/relay" },
  { method: "GET", path: "/api/v1/health" },
  { method: "GET", path: "/api/v1/treasury" },
  { method: "GET", path: "/api/v1/policy-state" },
  { method: "GET", path: "/api/v1/audit" },
  { method: "GET", path: "/api/mcp" },
  { method: "POST", path: "/api/mcp" },
];

const jsonValue = fc.jsonValue({ maxDepth: 3 });
const fuzzBody = fc.oneof(
  jsonValue,
  fc.dictionary(
    fc.constantFrom(
      "action",
      "amount",
      "amount_usdc",
      "current_ltv",
      "target",
      "allocation",
      "purpose",
      "tx_id",
      "signed_transaction",
      "jsonrpc",
      "method",
      "params",
      "id",
      "asset",
      "address",
      "wallet_address",
      "chain",
      "preset",
      "execution_mode",
      "operator_name",
      "operator_email",
      "use_case",
      "expected_monthly_volume_usdc",
      "__proto__",
      "constructor",
    ),
    fc.oneof(
      jsonValue,
      fc.double(),
      fc.constantFrom(
        "2.0",
        "tools/list",
        "tools/call",
        "initialize",
        { name: "preview_action", arguments: { action: "borrow", amount: 1 } },
        { name: "nope" },
        "deposit",
        "borrow",
        "eth",
        "btc",
        { btc: 50, eth: 50 },
        { btc: 1e308 },
        "tx_",
        "0x02",
        "base",
        "balanced",
        "wallet",
        "0x1111111111111111111111111111111111111111",
        "demo",
        1e308,
        -0,
        100,
        100000,
        5e-7,
      ),
    ),
  ),
);
const fuzzQueryValue = fc.oneof(
  fc.string(),
  fc.double().map(String),
  fc.constantFrom("", "demo", "NaN", "Infinity", "1e400", "0x00", "%00", "[]", "40", "75.0000001"),
);
const fuzzIdSegment = fc.oneof(fc.string(), fc.constantFrom("trs_", "agr_", `trs_${"0".repeat(32)}`, "..", "%2e%2e", "%ff"));

describe("fuzz: malformed bodies and queries to every endpoint", () => {
  it("only ever answers 2xx or a typed 4xx, never a 500", async () => {
    const seen = new Map<number, number>();
    const keys = [
      (await call(gw.url, "POST", "/api/v1/sandbox/keys")).body.key,
      (await call(gw.url, "POST", "/api/v1/treasuries", { body: { wallet_address: "0x7777777777777777777777777777777777777777" } })).body.api_key,
    ];
    const authHeader = fc.oneof(
      fc.constant(undefined),
      fc.constantFrom(...keys).map((k) => `Bearer ${k}`),
      fc.string().map((s) => `Bearer ${s}`),
    );
    const idemHeader = fc.oneof(
      fc.constant(undefined),
      fc.string({ minLength: 8, maxLength: 20 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
      fc.constant("x"),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        fuzzBody,
        fc.dictionary(fc.constantFrom("ltv", "address", "id", "x"), fuzzQueryValue, { maxKeys: 3 }),
        fuzzIdSegment,
        fc.boolean(),
        authHeader,
        idemHeader,
        async (endpoint, body, query, idSegment, rawGarbage, authorization, idempotencyKey) => {
          const headers: Record<string, string> = {};
          if (authorization && /^[\x20-\x7e]*$/.test(authorization)) headers.authorization = authorization;
          if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
          const qs = new URLSearchParams(query as Record<string, string>).toString();
          const path = endpoint.path.replace("{id}", encodeURIComponent(idSegment)) + (qs ? `?${qs}` : "");
          const r =
            endpoint.method === "POST"
              ? rawGarbage
                ? await call(gw.url, "POST", path, {
                    rawBody: JSON.stringify(body).slice(0, -1) + "\u0000",
                    headers: { ...headers, "content-type": "application/json" },
                  })
                : await call(gw.url, "POST", path, { body, headers })
              : await call(gw.url, "GET", path, { headers });
          seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
          expect(r.status, `${endpoint.method} ${path}`).toBeLessThan(500);
          if (r.status >= 400) {
            expect(typeof r.body?.error, `${endpoint.method} ${path} -> ${r.text}`).toBe("string");
            expect(typeof r.body?.message).toBe("string");
            expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
          }
        },
      ),
      { numRuns: 600 },
    );
    expect([...seen.keys()].some((s) => s >= 400)).toBe(true);
  }, 120_000);
});
