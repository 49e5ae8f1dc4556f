/**
 * Market rates over real RPCs: a real Anvil node answering as Base and as
 * Ethereum. On this machine no public RPC is reachable and no Aave market is
 * deployed on these nodes yet, so what is tested here is that the service
 * reads the chain and says exactly why it has no rate, never claiming live.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/src/lib/clock";
import { MarketRatesService, rayAprToApyPct } from "../../gateway/src/services/market-rates";
import { freePort, startAnvil, type AnvilNode } from "../../fixtures/anvil";
import { call, startTestGateway } from "../helpers/gateway";

let base: AnvilNode;
let wrongChain: AnvilNode;

beforeAll(async () => {
  [base, wrongChain] = await Promise.all([startAnvil({ chainId: 8453 }), startAnvil({ chainId: 31337 })]);
});
afterAll(async () => {
  await Promise.all([base?.stop(), wrongChain?.stop()]);
});

describe("ray APR to APY", () => {
  it("compounds per second like Aave", () => {
    expect(rayAprToApyPct(0n)).toBe(0);
    // 5% APR -> 5.1271% APY
    expect(rayAprToApyPct(5n * 10n ** 25n)).toBeCloseTo(5.1271, 3);
    // 10% APR -> 10.5171% APY
    expect(rayAprToApyPct(10n ** 26n)).toBeCloseTo(10.5171, 3);
  });
});

describe("reading the Pool over RPC", () => {
  it("reports per-entry why a configured chain has no rate, and environment is not live", async () => {
    const deadPort = await freePort();
    const gw = await startTestGateway({
      BASE_RPC_URL: base.rpcUrl,
      ARBITRUM_RPC_URL: wrongChain.rpcUrl,
      ETHEREUM_RPC_URL: `http://127.0.0.1:${deadPort}`,
      RPC_TIMEOUT_MS: "1000",
    });
    try {
      const r = await call(gw.url, "GET", "/api/v1/public/market-rates");
      expect(r.status).toBe(200);
      expect(r.body.environment).toBe("unavailable");
      const byChain = Object.fromEntries(r.body.rates.map((x: any) => [x.chain, x]));
      expect(byChain.base).toMatchObject({ source: "unavailable", borrow_apy_pct: null });
      expect(byChain.base.error).toMatch(/no contract at the Aave V3 Pool address 0xA238Dd80C259a72e81d7e4664a9801593F98d1c5/);
      expect(byChain.arbitrum.source).toBe("unavailable");
      // a chain with no Aave there, and a dead RPC: each says which
      expect(byChain.arbitrum.error).toBe("no contract at the Aave V3 Pool address 0x794a61358D6845594F94dc1DB02A252b5b4814aD on this RPC");
      expect(byChain.ethereum.source).toBe("unavailable");
      expect(byChain.ethereum.error).toBe("HTTP request failed.");
    } finally {
      await gw.close();
    }
  });

  it("marks a previous reading stale after the cache window instead of passing it off as live", async () => {
    const clock = new ManualClock(new Date("2026-11-21T00:00:00Z"));
    const service = new MarketRatesService({ base: base.rpcUrl }, { ttlSeconds: 60, timeoutMs: 1000, clock });
    // seed a reading as if the Pool had answered, then let the window pass with the RPC failing
    (service as any).cache.set("base", { apyPct: 4.2, observedAt: clock.now(), blockNumber: 1 });
    let doc = await service.document();
    expect(doc.rates.find((r) => r.chain === "base")).toMatchObject({ source: "aave_v3_pool_rpc", stale: false, borrow_apy_pct: 4.2 });
    expect(doc.environment).toBe("partial");
    clock.advance(61_000);
    doc = await service.document();
    const entry = doc.rates.find((r) => r.chain === "base")!;
    expect(entry).toMatchObject({ source: "cache", stale: true, borrow_apy_pct: 4.2 });
    expect(entry.error).toMatch(/no contract/);
    expect(doc.environment).toBe("unavailable");
  });
});
