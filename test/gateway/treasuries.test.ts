import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../gateway/src/lib/secrets";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator, startValidatedGateway } from "../helpers/openapi";

let gw: TestGateway;
let v: ResponseValidator;
let checkedReq: Awaited<ReturnType<typeof startValidatedGateway>>["req"];
const req = (method: string, path: string, body?: unknown) => checkedReq(method, path, body);

beforeAll(async () => {
  ({ gw, v, req: checkedReq } = await startValidatedGateway());
});
afterAll(() => gw.close());

describe("POST /api/v1/sandbox/keys", () => {
  it("returns 201 with a sk_test_ key, expires_at, and a demo treasury it is bound to", async () => {
    const r = await req("POST", "/api/v1/sandbox/keys");
    expect(r.status).toBe(201);
    expect(r.body.sandbox).toBe(true);
    expect(r.body.key).toMatch(/^sk_test_[A-Za-z0-9_-]{43}$/);
    expect(new Date(r.body.expires_at).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    expect(r.body.treasury_id).toMatch(/^trs_[0-9a-f]{32}$/);
    const t = await req("GET", `/api/v1/treasuries/${r.body.treasury_id}`);
    expect(t.body).toMatchObject({ execution_mode: "managed", preset: "balanced", status: "active" });
    expect(t.body.state).toMatchObject({ ltv: 40, usdc_balance: 5000, debt_usdc: 24000 });
    expect(t.body.api_key).toBeUndefined();
  });

  it("stores only the hash of the key", async () => {
    const r = await req("POST", "/api/v1/sandbox/keys");
    const keys = await gw.ctx.stores.apiKeys.all();
    expect(JSON.stringify(keys)).not.toContain(r.body.key);
    expect(keys.some((k) => k.keyHash === hashApiKey(r.body.key))).toBe(true);
  });

  it("answers 503 with Retry-After when sandbox capacity is exhausted", async () => {
    // its own gateway with a capacity of 3: exactly the fourth key is refused
    const small = await startValidatedGateway({ SANDBOX_KEY_CAPACITY: "3" });
    try {
      const statuses = [];
      let last;
      for (let i = 0; i < 4; i++) {
        last = await small.req("POST", "/api/v1/sandbox/keys");
        statuses.push(last.status);
      }
      expect(statuses).toEqual([201, 201, 201, 503]);
      expect(last!.body.error).toBe("sandbox_unavailable");
      expect(last!.headers.get("retry-after")).toBe("3600");
    } finally {
      await small.gw.close();
    }
  });
});

describe("GET /api/v1/treasuries", () => {
  it("serves the input schema, presets and the definitions behind the figures", async () => {
    const r = await req("GET", "/api/v1/treasuries");
    expect(r.status).toBe(200);
    expect(r.body.object).toBe("treasury_create_schema");
    expect(r.body.presets).toEqual(["conservative", "balanced", "aggressive"]);
    expect(r.body.input_schema.required).toEqual(["wallet_address"]);
    expect(r.body.preset_definitions.balanced).toMatchObject({ live_band: { min: 35, max: 50 }, ceiling: 60, park_target: 25 });
    expect(r.body.preset_definitions.conservative.ceiling).toBeLessThan(60);
    expect(r.body.preset_definitions.aggressive.ceiling).toBeGreaterThan(60);
    expect(r.body.definitions.health_score).toMatch(/liquidation threshold/);
    expect(r.body.definitions.health_score_without_debt).toMatch(/100/);
  });
});

describe("POST /api/v1/treasuries", () => {
  it("creates a treasury with the defaults and a sandbox key shown once", async () => {
    const r = await req("POST", "/api/v1/treasuries", { wallet_address: "0x52908400098527886E0F7030069857D2E4169EE7" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      sandbox: true,
      object: "treasury",
      wallet_address: "0x52908400098527886E0F7030069857D2E4169EE7",
      chain: "base",
      preset: "balanced",
      execution_mode: "wallet",
      status: "active",
      policy: { live_band: { min: 35, max: 50 }, ceiling: 60, park_target: 25 },
    });
    expect(r.body.treasury_id).toMatch(/^trs_[0-9a-f]{32}$/);
    expect(r.body.api_key).toMatch(/^sk_test_/);
    const again = await req("GET", `/api/v1/treasuries/${r.body.treasury_id}`);
    expect(again.body.api_key).toBeUndefined();
    expect(again.body.state).toMatchObject({ usdc_balance: 0, ltv: 0, health_score: 100 });
  });

  it("honours chain, preset and execution_mode", async () => {
    const r = await req("POST", "/api/v1/treasuries", {
      wallet_address: "0x1111111111111111111111111111111111111111",
      chain: "arbitrum",
      preset: "aggressive",
      execution_mode: "managed",
    });
    expect(r.body).toMatchObject({ chain: "arbitrum", preset: "aggressive", execution_mode: "managed" });
  });

  it("refuses invalid input with typed 400s", async () => {
    const bad = [
      {},
      { wallet_address: "0x123" },
      { wallet_address: "1111111111111111111111111111111111111111" },
      { wallet_address: "0x111111111111111111111111111111111111111g" },
      { wallet_address: "0x1111111111111111111111111111111111111111", chain: "ethereum" },
      { wallet_address: "0x1111111111111111111111111111111111111111", preset: "yolo" },
      { wallet_address: "0x1111111111111111111111111111111111111111", execution_mode: "custodial" },
      { wallet_address: "0x1111111111111111111111111111111111111111", surprise: 1 },
      [],
    ];
    for (const body of bad) {
      const r = await req("POST", "/api/v1/treasuries", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("invalid_request");
      // every refusal says where and what
      expect(r.body.details, JSON.stringify(body)).toEqual(
        expect.arrayContaining([expect.objectContaining({ location: "body", message: expect.any(String) })]),
      );
    }
  });
});

describe("GET /api/v1/treasuries/{id}", () => {
  it("404 for an id of the spec's pattern (^trs_) that does not exist, 400 for one that does not match it", async () => {
    for (const id of [`trs_${"0".repeat(32)}`, "trs_doesnotexist000000000000", "trs_xyz", "trs_"]) {
      const unknown = await req("GET", `/api/v1/treasuries/${id}`);
      expect([unknown.status, unknown.body.error], id).toEqual([404, "treasury_not_found"]);
    }
    const malformed = await req("GET", "/api/v1/treasuries/xyz");
    expect(malformed.status).toBe(400);
  });
});
