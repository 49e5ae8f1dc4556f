import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator, validateDocument } from "../helpers/openapi";
import { reachFeeTier } from "../helpers/rows";

/** every path of the spec's summary table (4.1) */
const SPEC_PATHS: [string, string][] = [
  ["get", "/agents.json"],
  ["get", "/fees.json"],
  ["get", "/api/mcp"],
  ["post", "/api/mcp"],
  ["get", "/api/v1/public/market-rates"],
  ["get", "/api/v1/public/liquidation-distance"],
  ["get", "/api/v1/public/portfolio-state"],
  ["get", "/api/v1/public/policy-state"],
  ["get", "/api/v1/public/gateway-status"],
  ["post", "/api/v1/public/preview"],
  ["post", "/api/v1/sandbox/keys"],
  ["get", "/api/v1/treasuries"],
  ["post", "/api/v1/treasuries"],
  ["get", "/api/v1/treasuries/{id}"],
  ["post", "/api/v1/deposits"],
  ["post", "/api/v1/convert"],
  ["post", "/api/v1/borrow"],
  ["post", "/api/v1/repay"],
  ["post", "/api/v1/estimate"],
  ["get", "/api/v1/health"],
  ["get", "/api/v1/treasury"],
  ["get", "/api/v1/policy-state"],
  ["post", "/api/v1/relay"],
  ["get", "/api/v1/agents/apply"],
  ["post", "/api/v1/agents/apply"],
  ["get", "/api/v1/agents/apply/{id}"],
];

let gw: TestGateway;
let doc: any;
let validator: ResponseValidator;

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
  validator = new ResponseValidator(doc);
});
afterAll(() => gw.close());

describe("OpenAPI document", () => {
  it("is a valid OpenAPI 3.1.0 document with the spec's version", async () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("2026-06-25");
    const result = await validateDocument(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it("lists every path of the spec's summary table with its method", () => {
    for (const [method, path] of SPEC_PATHS) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toMatchObject({ operationId: expect.any(String), responses: expect.any(Object) });
      // every operation documents at least one success status
      expect(
        Object.keys(op.responses).some((s: string) => /^2\d\d$/.test(s)),
        `${method.toUpperCase()} ${path} documents a success`,
      ).toBe(true);
    }
  });

  it("declares bearer|x402 security and Idempotency-Key where the spec does", () => {
    for (const p of ["/api/v1/deposits", "/api/v1/convert", "/api/v1/borrow", "/api/v1/repay", "/api/v1/withdraw", "/api/v1/sell", "/api/v1/exit"]) {
      const op = doc.paths[p].post;
      // a downward leg also takes the wallet's own signature (sign-in-with-x), free
      const down = ["/api/v1/repay", "/api/v1/withdraw", "/api/v1/sell", "/api/v1/exit"].includes(p);
      expect(op.security).toEqual([{ bearerAuth: [] }, { x402Payment: [] }, { x402PaymentV2: [] }, ...(down ? [{ signInWithX: [] }] : [])]);
      expect(Object.keys(op.responses["402"].headers)).toEqual(expect.arrayContaining(["PAYMENT-REQUIRED", "WWW-Authenticate"]));
      expect(Object.keys(op.responses["202"].headers)).toEqual(expect.arrayContaining(["X-PAYMENT-RESPONSE", "PAYMENT-RESPONSE"]));
      const header = op.parameters.find((x: any) => x.in === "header" && x.name === "Idempotency-Key");
      expect(header.required).toBe(true);
      expect(header.schema).toMatchObject({ minLength: 8, maxLength: 120 });
    }
    expect(doc.components.securitySchemes.x402PaymentV2).toMatchObject({ type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE" });
    expect(doc.components.securitySchemes.signInWithX).toMatchObject({ type: "apiKey", in: "header", name: "SIGN-IN-WITH-X" });
    expect(doc.paths["/api/v1/relay"].post.parameters.some((x: any) => x.name === "Idempotency-Key")).toBe(true);
    expect(doc.paths["/api/v1/public/preview"].post.security).toEqual([]);
  });

  it("does not publish the admin API", () => {
    expect(Object.keys(doc.paths).some((p) => p.startsWith("/admin"))).toBe(false);
  });

  it("documents the request limits of the spec", () => {
    const ltv = doc.paths["/api/v1/public/liquidation-distance"].get.parameters.find((p: any) => p.name === "ltv");
    expect(ltv.schema).toMatchObject({ minimum: 1, maximum: 75, default: 40 });
    const create = doc.components.schemas.CreateTreasuryRequest;
    expect(create.properties.wallet_address.pattern).toBe("^0x[0-9a-fA-F]{40}$");
    const apply = doc.components.schemas.AccessRequestBody;
    expect(apply.properties.use_case.minLength).toBe(20);
    expect(apply.properties.operator_name.minLength).toBe(2);
    expect(apply.properties.operator_email.format).toBe("email");
  });
});

describe("discovery files", () => {
  it("GET /agents.json has every required field and points at this host", async () => {
    const r = await call(gw.url, "GET", "/agents.json");
    expect(r.status).toBe(200);
    validator.check("GET", "/agents.json", 200, r.body);
    expect(r.body.mcp_url).toBe(`${gw.url}/api/mcp`);
    expect(r.body.openapi_url).toBe(`${gw.url}/openapi.json`);
    expect(r.body.fees_url).toBe(`${gw.url}/fees.json`);
    expect(r.body.human_approval_required).toBe(true);
    expect(r.body.supported_interfaces).toEqual(["MCP", "REST", "x402"]);
    expect(r.body.supported_assets).toEqual(["BTC", "ETH", "USDC"]);
  });

  it("GET /fees.json shows the launch tier at 2% and the ratchet", async () => {
    const r = await call(gw.url, "GET", "/fees.json");
    expect(r.status).toBe(200);
    validator.check("GET", "/fees.json", 200, r.body);
    expect(r.body.current_tier).toEqual({ tier: "launch", deposit_fee_pct: 2, buy_fee_pct: 2, cycle_fee_pct: 2 });
    expect(r.body.invariants).toHaveLength(6);
    expect(r.body.ratchet.direction).toBe("one_way_down");
  });

  it("GET /fees.json follows the ratchet in the store on every request (its text is kept only for the state it read)", async () => {
    // a gateway of its own: the ratchet only moves up (a trigger refuses the way back)
    const own = await startTestGateway();
    try {
      const before = await call(own.url, "GET", "/fees.json");
      expect(before.body.current_tier.tier).toBe("launch");
      expect((await call(own.url, "GET", "/fees.json")).text).toBe(before.text);
      // another instance (or the action that crossed the threshold) moved the shared ratchet
      await reachFeeTier(own.ctx.db, 1, 10_000_000n * 1_000_000n);
      const after = await call(own.url, "GET", "/fees.json");
      expect(after.body.current_tier).toMatchObject({ tier: "growth", cycle_fee_pct: 1.75 });
      validator.check("GET", "/fees.json", 200, after.body);
    } finally {
      await own.close();
    }
  });

  it("every response carries X-Request-Id and the rate-limit headers", async () => {
    for (const path of ["/agents.json", "/fees.json", "/openapi.json", "/nope"]) {
      const r = await call(gw.url, "GET", path);
      expect(r.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
      expect(Number(r.headers.get("x-ratelimit-remaining"))).toBeGreaterThanOrEqual(0);
      expect(Number(r.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000 - 1);
    }
  });

  it("echoes a well-formed incoming X-Request-Id and logs it as structured JSON", async () => {
    const r = await call(gw.url, "GET", "/nope", { headers: { "x-request-id": "trace-abc-12345" } });
    expect(r.headers.get("x-request-id")).toBe("trace-abc-12345");
    expect(r.body.request_id).toBe("trace-abc-12345");
    const line = gw.logLines().find((l) => l.request_id === "trace-abc-12345");
    expect(line).toMatchObject({ level: 30, res: { statusCode: 404 } });
  });
});
