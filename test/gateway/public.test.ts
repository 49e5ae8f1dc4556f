import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ResponseValidator, startValidatedGateway } from "../helpers/openapi";
import { registerProven } from "../helpers/treasury";
import { REFERENCE_LIQUIDATION_THRESHOLD_BPS } from "@treasury/core/domain/assets";
import { priceDropToLiquidationPct } from "@treasury/core/domain/position";
import { LIQUIDATION_TEXTS } from "../../gateway/src/routes/public";
import { liquidationDistanceDocument } from "../../gateway/src/services/liquidation-distance";

let gw: TestGateway;
let v: ResponseValidator;
let checkedReq: Awaited<ReturnType<typeof startValidatedGateway>>["req"];
const get = (path: string) => checkedReq("GET", path);
const post = (path: string, body: unknown) => checkedReq("POST", path, body);

beforeAll(async () => {
  ({ gw, v, req: checkedReq } = await startValidatedGateway());
});
afterAll(() => gw.close());

describe("GET /api/v1/public/liquidation-distance", () => {
  it("defaults ltv to 40 and applies 1 - ltv / threshold", async () => {
    const r = await get("/api/v1/public/liquidation-distance");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "liquidation_distance", ltv: 40, price_drop_to_liquidation_pct: 50.31, service_recommended_ceiling_ltv: 60 });
    const r60 = await get("/api/v1/public/liquidation-distance?ltv=60");
    expect(r60.body.price_drop_to_liquidation_pct).toBe(25.47);
  });

  it("accepts the bounds 1 and 75 and refuses outside them with a typed 400", async () => {
    expect((await get("/api/v1/public/liquidation-distance?ltv=1")).status).toBe(200);
    expect((await get("/api/v1/public/liquidation-distance?ltv=75")).status).toBe(200);
    for (const bad of ["0.99", "75.01", "-1", "abc", "", "1e2", "0x10"]) {
      const r = await get(`/api/v1/public/liquidation-distance?ltv=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toBe("invalid_request");
      expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
    }
  });

  it("answers every LTV with its own figures, past the number of texts it keeps (they start over when full)", async () => {
    const ltvs = Array.from({ length: LIQUIDATION_TEXTS + 8 }, (_, i) => 1 + i / 4);
    for (const ltv of [...ltvs, ltvs[0]!, ltvs[1]!]) {
      const r = await get(`/api/v1/public/liquidation-distance?ltv=${ltv}`);
      expect(r.body, String(ltv)).toEqual(liquidationDistanceDocument(ltv));
      expect(r.body.price_drop_to_liquidation_pct).toBe(priceDropToLiquidationPct(ltv, REFERENCE_LIQUIDATION_THRESHOLD_BPS));
    }
  });
});

describe("GET /api/v1/public/portfolio-state", () => {
  it("serves the demo portfolio by default", async () => {
    const r = await get("/api/v1/public/portfolio-state");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "portfolio_state", environment: "public_demo", current_ltv: 40, health_score: 2.01 });
    expect(r.body.holdings).toEqual({ btc: 0.5, eth: 10, usdc: 5000, usdc_supplied: 0 });
  });

  it("serves a proven treasury by wallet address, 404 for an unknown or unproven one, 400 for a malformed one", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const wallet = account.address;
    // a registration without a proof is never shown by address
    await post("/api/v1/treasuries", { wallet_address: wallet });
    expect((await get(`/api/v1/public/portfolio-state?address=${wallet}`)).status).toBe(404);
    await registerProven(gw.url, account);
    const r = await get(`/api/v1/public/portfolio-state?address=${wallet}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ environment: "sandbox_simulation", current_ltv: 0, health_score: 100 });
    expect((await get("/api/v1/public/portfolio-state?address=0x00000000000000000000000000000000000000ab")).status).toBe(404);
    expect((await get("/api/v1/public/portfolio-state?address=nothex")).status).toBe(400);
  });
});

describe("GET /api/v1/public/policy-state", () => {
  it("serves the demo policy state of the balanced preset, as the spec shows it", async () => {
    const r = await get("/api/v1/public/policy-state");
    expect(r.status).toBe(200);
    const b = r.body;
    expect(b).toMatchObject({
      object: "policy_state",
      environment: "public_demo",
      address: "demo",
      preset: "balanced",
      plan_version: "v3",
      protection_status: "active",
    });
    expect(b.ltv_bands).toEqual({ safe: { min: 0, max: 35 }, live: { min: 35, max: 50 }, recommended_ceiling: 60, park_target: 25 });
    expect(b.dormancy_clock.window_months).toBe(6);
    expect(new Date(b.dormancy_clock.expires_at).getUTCMonth()).toBe((new Date(b.dormancy_clock.last_fee_bearing_activity_at).getUTCMonth() + 6) % 12);
    expect(b.protection_authority).toMatchObject({
      target_ltv_after_rewind: 25,
      trigger_metric: "health_score",
      default_protect_below_health_score: 1.3,
      default_repay_above_health_score: 3,
      repayment_source: "user collateral",
    });
    expect(b.delegation.states).toEqual(["not_granted", "approved_pending_funds", "active", "revoked_pending_settlement", "revoked"]);
    expect(b.gas_caps).toEqual({ per_action_usd: 0.25, per_month_usd: 5, applies_to: "protection actions only" });
    expect(b.monitoring_tier).toEqual({ tier: "active", check_frequency: "high-frequency" });
    expect(b.invariants).toHaveLength(6);
    expect(b.fee_schedule_ref).toBe(`${gw.url}/fees.json`);
  });

  it("400 on a malformed address, 404 on an unknown one", async () => {
    expect((await get("/api/v1/public/policy-state?address=0x12")).status).toBe(400);
    expect((await get("/api/v1/public/policy-state?address=0x00000000000000000000000000000000000000cd")).status).toBe(404);
  });
});

describe("GET /api/v1/public/gateway-status", () => {
  it("is online with the supported assets", async () => {
    const r = await get("/api/v1/public/gateway-status");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "gateway_status", status: "online", supported_assets: ["BTC", "ETH", "USDC"] });
    // no RPC configured: nothing is broadcast, and the document says so
    expect(r.body.execution).toBe("simulated");
    expect(r.body.chains.map((c: { execution: string }) => c.execution)).toEqual(["simulated", "simulated"]);
  });
});

describe("GET /api/v1/public/market-rates without RPCs", () => {
  it("says it has no live data instead of claiming live", async () => {
    const r = await get("/api/v1/public/market-rates");
    expect(r.status).toBe(200);
    expect(r.body.environment).toBe("unavailable");
    expect(r.body.rates.map((x: any) => [x.chain, x.chain_id])).toEqual([
      ["ethereum", 1],
      ["arbitrum", 42161],
      ["base", 8453],
    ]);
    for (const rate of r.body.rates) {
      expect(rate).toMatchObject({ source: "unavailable", stale: true, borrow_apy_pct: null });
      expect(rate.error).toMatch(/no RPC configured/);
    }
  });
});

describe("POST /api/v1/public/preview", () => {
  it("previews a deposit with the 2% entry fee", async () => {
    const r = await post("/api/v1/public/preview", { action: "deposit", amount: 1000 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      object: "action_preview",
      environment: "public_demo",
      approved: true,
      action: "deposit",
      amount_usdc: 1000,
      service_fee_usdc: 20,
      ltv_before: 40,
      requires_signature: true,
      unsigned_transaction: null,
    });
    // 24,000 / (60,000 + 980)
    expect(r.body.ltv_after).toBe(39.36);
  });

  it("charges nothing on downward legs", async () => {
    for (const action of ["repay", "sell", "withdraw", "exit", "protection", "auto_repay", "auto_deleverage"]) {
      const r = await post("/api/v1/public/preview", { action, amount: 100 });
      expect(r.status, action).toBe(200);
      expect(r.body.service_fee_usdc, action).toBe(0);
    }
  });

  it("refuses a borrow above the ceiling with the safety rail, and the safe_amount retry passes", async () => {
    const r = await post("/api/v1/public/preview", { action: "borrow", amount: 20_000, current_ltv: 50 });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: "ltv_limit_exceeded", allowed: false, approved: false, current_ltv: 50, safe_amount: 6000 });
    expect(r.body.resulting_ltv).toBeGreaterThan(60);
    expect(typeof r.body.message).toBe("string");
    const retry = await post("/api/v1/public/preview", { action: "borrow", amount: r.body.safe_amount, current_ltv: 50 });
    expect(retry.status).toBe(200);
    expect(retry.body.ltv_after).toBe(60);
    expect(retry.body.service_fee_usdc).toBe(120);
  });

  it("accepts amount_usdc as an equal alias and refuses a different one", async () => {
    expect((await post("/api/v1/public/preview", { action: "borrow", amount: 10, amount_usdc: 10 })).status).toBe(200);
    const r = await post("/api/v1/public/preview", { action: "borrow", amount: 10, amount_usdc: 11 });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_request");
  });

  it("validates the body at the edge", async () => {
    const bad = [
      {},
      { action: "borrow" },
      { action: "fly", amount: 1 },
      { action: "borrow", amount: -1 },
      { action: "borrow", amount: 1, current_ltv: 76 },
      { action: "borrow", amount: 1, current_ltv: -0.1 },
      { action: "borrow", amount: 1, asset: "DOGE" },
      { action: "borrow", amount: 0.0000001 },
      { action: "borrow", amount: "10" },
      { action: "borrow", amount: 1, extra: true },
      { action: "withdraw", amount: 10_000_000 },
    ];
    for (const body of bad) {
      const r = await post("/api/v1/public/preview", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(typeof r.body.error).toBe("string");
    }
  });

  it("previews on a proven treasury by address (404 when unknown)", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const wallet = account.address;
    await registerProven(gw.url, account, { preset: "conservative" });
    const deposit = await post("/api/v1/public/preview", { action: "deposit", amount: 500, address: wallet });
    expect(deposit.status).toBe(200);
    expect(deposit.body.environment).toBe("sandbox_simulation");
    const borrow = await post("/api/v1/public/preview", { action: "borrow", amount: 1, address: wallet });
    expect(borrow.status).toBe(403); // no collateral yet
    expect(borrow.body.safe_amount).toBe(0);
    expect((await post("/api/v1/public/preview", { action: "deposit", amount: 1, address: "0x00000000000000000000000000000000000000bc" })).status).toBe(404);
  });
});
