/** The trigger index against Aave's own health factor: it never misses a crossing, and a quiet block looks at few entries. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { INDEX_ASSETS, MAX_UINT256, mayCross, TriggerIndex, type IndexAsset, type MarketAt, type WatchedPosition } from "./trigger-index";

const RAY = 10n ** 27n;
const WAD = 10n ** 18n;

/**
 * Aave 3.0 to 3.3's GenericLogic.calculateUserAccountData (aave-v3-core), line by line, for a user whose configuration
 * enables `enabled` as collateral and borrows USDC. WadRayMath and PercentageMath round half up.
 */
function referenceAccount(scaled: Partial<Record<IndexAsset, bigint>>, scaledDebt: bigint, m: MarketAt) {
  const rayMul = (a: bigint, b: bigint) => (a * b + RAY / 2n) / RAY;
  const percentMul = (v: bigint, p: bigint) => (v * p + 5_000n) / 10_000n;
  const wadDiv = (a: bigint, b: bigint) => (a * WAD + b / 2n) / b;
  let totalCollateral = 0n;
  let avgLiquidationThreshold = 0n;
  let totalDebt = 0n;
  for (const asset of INDEX_ASSETS) {
    const assetUnit = 10n ** BigInt(m.decimals[asset]);
    const usingAsCollateral = scaled[asset] !== undefined;
    if (m.liquidationThresholdBps[asset] !== 0n && usingAsCollateral) {
      const balance = rayMul(scaled[asset]!, m.liquidityIndex[asset]) * m.prices[asset];
      const userBalanceInBaseCurrency = balance / assetUnit;
      totalCollateral += userBalanceInBaseCurrency;
      avgLiquidationThreshold += userBalanceInBaseCurrency * m.liquidationThresholdBps[asset];
    }
    if (asset === "USDC" && scaledDebt !== 0n) totalDebt += (rayMul(scaledDebt, m.debtIndex) * m.prices.USDC) / assetUnit;
  }
  avgLiquidationThreshold = totalCollateral !== 0n ? avgLiquidationThreshold / totalCollateral : 0n;
  const healthFactor = totalDebt === 0n ? MAX_UINT256 : wadDiv(percentMul(totalCollateral, avgLiquidationThreshold), totalDebt);
  return { totalCollateral, avgLiquidationThreshold, healthFactor };
}
/**
 * The reference: the same in Aave 3.4+ (aave-v3-origin 3.6, the fork's): aToken balance rayMulFloor, debt
 * rayMulCeil then mulDivCeil, HF = wadDiv(Σ C_i LT_i, D) / 10^4 (no floored average threshold).
 */
function originHealthWad(p: WatchedPosition, m: MarketAt): bigint {
  const wadDiv = (a: bigint, b: bigint) => (a * WAD + b / 2n) / b;
  let weighted = 0n;
  for (const asset of INDEX_ASSETS) {
    if (m.liquidationThresholdBps[asset] === 0n || p.scaledCollateral[asset] === undefined) continue;
    const balance = (p.scaledCollateral[asset]! * m.liquidityIndex[asset]) / RAY;
    weighted += ((balance * m.prices[asset]) / 10n ** BigInt(m.decimals[asset])) * m.liquidationThresholdBps[asset];
  }
  const unit = 10n ** BigInt(m.decimals.USDC);
  const debt = (((p.scaledDebt * m.debtIndex + RAY - 1n) / RAY) * m.prices.USDC + unit - 1n) / unit;
  return debt === 0n ? MAX_UINT256 : wadDiv(weighted, debt) / 10_000n;
}
const coreHealthWad = (p: WatchedPosition, m: MarketAt) => referenceAccount(p.scaledCollateral, p.scaledDebt, m).healthFactor;
const refHf = originHealthWad;

/** Aave V3 on Base, about today */
const BASE: MarketAt = {
  prices: { USDC: 100_000_000n, WETH: 3_000n * 10n ** 8n, cbBTC: 90_000n * 10n ** 8n },
  liquidityIndex: { USDC: RAY, WETH: RAY, cbBTC: RAY },
  debtIndex: RAY,
  liquidationThresholdBps: { USDC: 7_800n, WETH: 8_300n, cbBTC: 7_800n },
  decimals: { USDC: 6, WETH: 18, cbBTC: 8 },
};
/** `m` with each price multiplied by per-mille factors */
const moved = (m: MarketAt, perMille: Partial<Record<IndexAsset, bigint>>): MarketAt => ({
  ...m,
  prices: { USDC: m.prices.USDC, WETH: (m.prices.WETH * (perMille.WETH ?? 1000n)) / 1000n, cbBTC: (m.prices.cbBTC * (perMille.cbBTC ?? 1000n)) / 1000n },
});
const TRIGGER = 1_300_000_000_000_000_000n;
const position = (id: string, scaledCollateral: WatchedPosition["scaledCollateral"], usdcDebt: bigint, triggerWad = TRIGGER): WatchedPosition => ({
  id,
  scaledCollateral,
  scaledDebt: usdcDebt,
  triggerWad,
});
const under = (positions: WatchedPosition[], m: MarketAt) => positions.filter((p) => refHf(p, m) < p.triggerWad).map((p) => p.id);

describe("Aave's health factor", () => {
  it("WETH and cbBTC collateral: Σ C_i LT_i wadDiv the debt, over 10^4 (3.6: no rounded average threshold)", () => {
    const p = position("mixed", { WETH: 10n ** 18n, cbBTC: 1_000_000n }, 2_000_000_000n);
    const index = new TriggerIndex();
    index.upsert(p, BASE);
    // C = 3,000 + 900 USD; HF = (3,000 x 0.83 + 900 x 0.78) / 2,000 = 1.596 (3.0's floored avgLT 8,184 gave 1.59588)
    expect(index.healthWad("mixed", BASE)).toBe(1_596_000_000_000_000_000n);
    expect(coreHealthWad(p, BASE)).toBe(1_595_880_000_000_000_000n);
    expect(index.healthWad("mixed", BASE)).toBe(refHf(p, BASE));
    expect(index.candidates(BASE)).toEqual([]);
    // ETH -30%: C = 2,100 + 900; HF = (2,100 x 0.83 + 900 x 0.78) / 2,000 = 1.2225
    const fall = moved(BASE, { WETH: 700n });
    expect(index.healthWad("mixed", fall)).toBe(1_222_500_000_000_000_000n);
    expect(index.candidates(fall)).toEqual(["mixed"]);
  });

  it("a reserve counts only when enabled as collateral with a threshold above zero; interest on both sides", () => {
    const p = position("p", { WETH: 10n ** 18n, USDC: 1_000_000_000n }, 2_000_000_000n);
    const m: MarketAt = {
      ...BASE,
      liquidationThresholdBps: { ...BASE.liquidationThresholdBps, USDC: 0n },
      liquidityIndex: { ...BASE.liquidityIndex, WETH: (RAY * 105n) / 100n },
      debtIndex: (RAY * 11n) / 10n,
    };
    const index = new TriggerIndex();
    index.upsert(p, m);
    // C = 3,150 USD (USDC's threshold is 0), D = 2,200 USD: HF = wadDiv(3,150 x 8,300, 2,200) / 10^4, the last digit floored
    expect(index.healthWad("p", m)).toBe((315_000_000_000n * 8_300n * WAD + 110_000_000_000n) / 220_000_000_000n / 10_000n);
    expect(index.healthWad("p", m)).toBe(1_188_409_090_909_090_909n); // 3.0's percentMul then wadDiv: ...091
    expect(index.healthWad("p", m)).toBe(refHf(p, m));
  });
});

describe("candidates", () => {
  it("a debt-free position is never a candidate, whatever the market", () => {
    const index = new TriggerIndex();
    const p = position("free", { WETH: 10n ** 18n }, 0n);
    index.upsert(p, BASE);
    const crash: MarketAt = { ...moved(BASE, { WETH: 1n, cbBTC: 1n }), liquidationThresholdBps: { USDC: 0n, WETH: 0n, cbBTC: 0n } };
    expect([index.candidates(crash), index.visited]).toEqual([[], 0]); // not even looked at
    expect(index.healthWad("free", crash)).toBe(MAX_UINT256);
    expect(mayCross(p, crash)).toBe(false);
    index.upsert({ ...p, eMode: true }, BASE);
    expect([index.candidates(crash), index.visited]).toEqual([[], 0]);
  });

  it("a falling market where ETH falls and BTC rises: ETH positions cross, BTC positions do not, a mix by its exact figure", () => {
    const positions = [
      position("eth", { WETH: 10n ** 18n }, 1_800_000_000n), // HF 1.383
      position("btc", { cbBTC: 10_000_000n }, 5_000_000_000n), // 0.1 BTC: HF 1.404
      position("btc-2", { cbBTC: 10_000_000n }, 4_990_000_000n),
      position("btc-3", { cbBTC: 10_000_000n }, 4_980_000_000n),
      position("btc-4", { cbBTC: 10_000_000n }, 4_970_000_000n),
      position("mix-eth-heavy", { WETH: 3n * 10n ** 18n, cbBTC: 1_000_000n }, 6_000_000_000n), // HF 1.362
      position("mix-btc-heavy", { WETH: 10n ** 17n, cbBTC: 10_000_000n }, 5_300_000_000n), // HF 1.371
      position("deep", { WETH: 10n ** 19n }, 10_000_000_000n), // HF 2.49
    ];
    const index = new TriggerIndex();
    for (const p of positions) index.upsert(p, BASE);
    expect(index.candidates(BASE)).toEqual([]);
    const m = moved(BASE, { WETH: 880n, cbBTC: 1100n });
    const got = index.candidates(m);
    expect(under(positions, m)).toEqual(["eth", "mix-eth-heavy"]);
    expect(got.sort()).toEqual(["eth", "mix-eth-heavy"]);
    // per group: WETH 2 probes + eth; cbBTC (BTC rose) 3 probes and none; the mixes (ETH's fall) 1 probe + both, the
    // exact filter keeping the crossed one (one group for all would scan the four BTC positions too)
    expect(index.visited).toBe(9);
  });

  it("at the trigger: 1.2999 is a candidate, 1.3001 too (within one basis point of LT 83%), 1.3002 is not", () => {
    const index = new TriggerIndex();
    // 1 WETH at 3,000 USD, LT 83%: 2,490 USD of threshold; debt 2,490 / 1.2999, 2,490 / 1.3001 and 2,490 / 1.3002 USD
    const at = (id: string, hf: bigint) => position(id, { WETH: 10n ** 18n }, (2_490_000_000n * 10_000n) / hf);
    for (const p of [at("under", 12_999n), at("band", 13_001n), at("over", 13_002n)]) index.upsert(p, BASE);
    expect(index.healthWad("band", BASE)).toBeGreaterThan(TRIGGER);
    expect(index.candidates(BASE)).toEqual(["under", "band"]);
  });

  it("an e-mode position is always a candidate; upsert replaces, remove forgets", () => {
    const index = new TriggerIndex();
    index.upsert({ ...position("e", { WETH: 10n ** 20n }, 1_000_000n), eMode: true }, BASE);
    expect(index.candidates(BASE)).toEqual(["e"]);
    index.upsert(position("e", { WETH: 10n ** 18n }, 2_400_000_000n), BASE);
    expect([index.size, index.has("e"), index.candidates(BASE)]).toEqual([1, true, ["e"]]);
    index.upsert(position("e", { WETH: 10n ** 18n }, 1_000_000_000n), BASE);
    expect(index.candidates(BASE)).toEqual([]);
    index.remove("e");
    index.remove("e");
    expect([index.size, index.has("e"), index.candidates(moved(BASE, { WETH: 1n }))]).toEqual([0, false, []]);
    expect(() => index.healthWad("e", BASE)).toThrow(/position e is not indexed/);
    // an e-mode position under its trigger: once
    index.upsert({ ...position("e", { WETH: 10n ** 18n }, 2_400_000_000n), eMode: true }, BASE);
    expect(index.candidates(BASE)).toEqual(["e"]);
  });

  it("refuses a market it cannot bound, takes one at the edges", () => {
    const index = new TriggerIndex();
    const change = (asset: IndexAsset, field: "prices" | "liquidityIndex" | "liquidationThresholdBps" | "decimals", value: bigint | number) => ({
      ...BASE,
      [field]: { ...BASE[field], [asset]: value },
    });
    const refused = [
      { ...BASE, prices: { ...BASE.prices, USDC: 0n } },
      { ...BASE, debtIndex: RAY - 1n },
      ...INDEX_ASSETS.flatMap((a) => [
        change(a, "liquidityIndex", RAY - 1n),
        change(a, "prices", -1n),
        change(a, "liquidationThresholdBps", -1n),
        change(a, "liquidationThresholdBps", 10_001n),
        change(a, "decimals", -1),
        change(a, "decimals", 23),
      ]),
    ] as MarketAt[];
    for (const m of refused) {
      expect(() => index.candidates(m)).toThrow(/^market out of range/);
      expect(() => index.upsert(position("x", { WETH: 1n }, 1n), m)).toThrow(/^market out of range/);
    }
    const edges = [
      { ...BASE, prices: { ...BASE.prices, WETH: 0n } },
      change("WETH", "liquidationThresholdBps", 10_000n),
      change("cbBTC", "decimals", 0),
      change("WETH", "decimals", 22),
    ];
    for (const m of edges as MarketAt[]) expect(() => index.candidates(m)).not.toThrow();
  });

  it("a position with debt and no collateral is a candidate, however large its debt; equal keys are told apart by id", () => {
    const index = new TriggerIndex();
    index.upsert(position("bare", {}, 10n ** 30n), BASE);
    expect(index.candidates(BASE)).toEqual(["bare"]);
    const twin = (id: string) => position(id, { WETH: 10n ** 18n }, 2_400_000_000n);
    index.upsert(twin("a"), BASE);
    index.upsert(twin("b"), BASE);
    index.remove("a");
    index.remove("bare");
    expect(index.candidates(BASE)).toEqual(["b"]);
  });

  it("re-bases when the prefix holds many it drops (prices moved apart), then a block visits few", () => {
    const index = new TriggerIndex();
    // BTC-heavy mixes at HF about 1.5: ETH -40% and BTC +60% raise each, but the group's bound follows ETH's fall
    for (let i = 0; i < 200; i++) index.upsert(position(`m${i}`, { WETH: 10n ** 17n, cbBTC: 10_000_000n }, 4_900_000_000n + BigInt(i) * 1_000_000n), BASE);
    const m = moved(BASE, { WETH: 600n, cbBTC: 1600n });
    const rebases = index.rebases;
    expect(index.candidates(m)).toEqual([]);
    expect([index.rebases, index.visited]).toEqual([rebases + 1, 8 + 199]); // 8 probes, all but the healthiest dropped
    expect(index.candidates(m)).toEqual([]);
    expect([index.rebases, index.visited]).toEqual([rebases + 1, 8]);
  });

  it("a quiet block visits O(log N) entries", () => {
    const index = new TriggerIndex();
    const n = 20_000;
    const groups: WatchedPosition["scaledCollateral"][] = [{ WETH: 1n }, { cbBTC: 1n }, { WETH: 1n, cbBTC: 1n }, { USDC: 1n, WETH: 1n }];
    for (let i = 0; i < n; i++) {
      const g = groups[i % groups.length]!;
      const collateral = Object.fromEntries(Object.keys(g).map((a) => [a, a === "WETH" ? 10n ** 18n : a === "cbBTC" ? 3_000_000n : 3_000_000_000n]));
      // threshold value per position is 2,340 to 2,490 USD per asset; debt gives HF from 1.5 to about 5
      index.upsert(position(`s${i}`, collateral, 1_000_000_000n - BigInt(i % 1000) * 500_000n), BASE);
    }
    expect(index.size).toBe(n);
    const bound = groups.length * (Math.ceil(Math.log2(n)) + 1);
    for (const m of [BASE, moved(BASE, { WETH: 990n }), moved(BASE, { WETH: 980n, cbBTC: 1020n })]) {
      expect(index.candidates(m)).toEqual([]);
      expect(index.visited).toBeLessThanOrEqual(bound);
    }
    expect(index.rebases).toBe(1); // the first upsert's
    expect(bound).toBeLessThan(100);
  });

  it("re-bases when an asset's weight halves, and stays exact", () => {
    const index = new TriggerIndex();
    const positions = [position("a", { WETH: 10n ** 18n }, 1_000_000_000n), position("b", { cbBTC: 1_000_000n }, 300_000_000n)];
    for (const p of positions) index.upsert(p, BASE);
    const rebases = index.rebases;
    const crash = moved(BASE, { WETH: 400n });
    expect(index.candidates(crash)).toEqual(["a"]);
    expect(index.rebases).toBe(rebases + 1);
  });
});

describe("the index never misses (property)", () => {
  const ratio = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map(BigInt);
  /** a market moved from `m`: each price its own way (falls to 2%, rises to 3x), indexes growing, thresholds changed now and then */
  const marketFrom = (m: MarketAt) =>
    fc
      .record({
        usdc: ratio(950, 1050),
        weth: fc.oneof(ratio(20, 3000), ratio(900, 1100), ratio(998, 1002)),
        btc: fc.oneof(ratio(20, 3000), ratio(900, 1100), ratio(998, 1002)),
        income: fc.tuple(ratio(1000, 1300), ratio(1000, 1100), ratio(1000, 1100)),
        debt: ratio(1000, 1400),
        lt: fc.option(fc.tuple(fc.constantFrom<IndexAsset>(...INDEX_ASSETS), fc.constantFrom(0n, 1n, 2n, 5_000n, 8_600n, 10_000n)), { freq: 4 }),
      })
      .map(({ usdc, weth, btc, income, debt, lt }): MarketAt => {
        const growth = (a: IndexAsset, f: bigint) => (m.liquidityIndex[a] * f) / 1000n;
        return {
          prices: { USDC: (m.prices.USDC * usdc) / 1000n || 1n, WETH: (m.prices.WETH * weth) / 1000n, cbBTC: (m.prices.cbBTC * btc) / 1000n },
          liquidityIndex: { USDC: growth("USDC", income[0]), WETH: growth("WETH", income[1]), cbBTC: growth("cbBTC", income[2]) },
          debtIndex: (m.debtIndex * debt) / 1000n,
          liquidationThresholdBps: lt ? { ...m.liquidationThresholdBps, [lt[0]]: lt[1] } : m.liquidationThresholdBps,
          decimals: m.decimals,
        };
      });
  const start = marketFrom(BASE);
  /** collateral from dust to whales; debt either free or set near the trigger at `at` (HF x 0.7 to x 1.6) */
  /** an amount of any order of magnitude, dust included: up to 10^e for e up to `digits` */
  const amount = (digits: number) => fc.integer({ min: 0, max: digits }).chain((e) => fc.bigInt(1n, 10n ** BigInt(e)));
  const positionAt = (id: string, at: MarketAt) =>
    fc
      .record({
        USDC: fc.option(amount(14), { freq: 3 }),
        WETH: fc.option(amount(24), { freq: 2 }),
        cbBTC: fc.option(amount(12), { freq: 2 }),
        trigger: fc.bigInt(WAD, 2n * WAD),
        near: fc.oneof(fc.bigInt(700n, 1600n), fc.bigInt(995n, 1005n)),
        debt: fc.oneof(fc.constant(0n), amount(14), fc.constant(-1n)),
        eMode: fc.boolean().map((b) => b && id.endsWith("7")),
        /** the trigger set one wei above Aave's health factor at `at` (either version's): the sharpest crossing */
        justOver: fc.constantFrom("no", "core", "origin"),
      })
      .map(({ USDC, WETH, cbBTC, trigger, near, debt, eMode, justOver }): WatchedPosition => {
        const scaledCollateral = Object.fromEntries(Object.entries({ USDC, WETH, cbBTC }).filter(([, v]) => v !== null)) as WatchedPosition["scaledCollateral"];
        // -1: the scaled debt that puts the health factor at `near` per mille of the trigger at `at`
        const { totalCollateral, avgLiquidationThreshold } = referenceAccount(scaledCollateral, 0n, at);
        const debtValue = (totalCollateral * avgLiquidationThreshold * WAD * 1000n) / (10_000n * trigger * near);
        const scaledDebt = debt >= 0n ? debt : (debtValue * 10n ** BigInt(at.decimals.USDC) * RAY) / (at.prices.USDC * at.debtIndex) + 1n;
        const p = { id, scaledCollateral, scaledDebt, triggerWad: trigger, eMode };
        const hf = justOver === "core" ? coreHealthWad(p, at) : originHealthWad(p, at);
        return { ...p, triggerWad: justOver !== "no" && hf < 10n * WAD ? hf + 1n : trigger };
      });
  /** large enough, and thresholds high enough, that the bound's slack is under 0.03% */
  const tight = (p: WatchedPosition, m: MarketAt) =>
    p.scaledDebt >= 1_000_000n &&
    referenceAccount(p.scaledCollateral, 0n, m).totalCollateral >= 100_000_000n &&
    INDEX_ASSETS.every((a) => p.scaledCollateral[a] === undefined || m.liquidationThresholdBps[a] === 0n || m.liquidationThresholdBps[a] >= 5_000n);
  const scenario = start.chain((r) =>
    fc.record({
      reference: fc.constant(r),
      positions: fc.array(fc.nat(40), { minLength: 1, maxLength: 25 }).chain((ids) => fc.tuple(...[...new Set(ids)].map((i) => positionAt(`t${i}`, r)))),
      markets: fc.array(fc.oneof(marketFrom(r), fc.constant(r)), { minLength: 1, maxLength: 4 }),
      rereads: fc.array(fc.nat(40), { maxLength: 5 }),
    }),
  );

  it("every position whose Aave health factor (3.0 to 3.3, or 3.4+) is under its trigger is a candidate; healthWad is 3.6's", () => {
    fc.assert(
      fc.property(scenario, ({ reference, positions, markets, rereads }) => {
        const index = new TriggerIndex();
        const live = new Map(positions.map((p) => [p.id, p]));
        for (const p of positions) index.upsert(p, reference);
        for (const [k, m] of markets.entries()) {
          const got = new Set(index.candidates(m));
          for (const p of live.values()) {
            expect(index.healthWad(p.id, m)).toBe(refHf(p, m));
            if (refHf(p, m) < p.triggerWad || (p.eMode && p.scaledDebt > 0n)) expect(got.has(p.id)).toBe(true);
            if (coreHealthWad(p, m) < p.triggerWad) expect(got.has(p.id)).toBe(true);
            if (p.scaledDebt === 0n) expect(got.has(p.id)).toBe(false);
            const lowest = [coreHealthWad(p, m), originHealthWad(p, m)].reduce((x, y) => (x < y ? x : y));
            if (got.has(p.id) && !p.eMode && tight(p, m)) expect(lowest * 10_000n).toBeLessThan(p.triggerWad * 10_003n);
          }
          // positions re-read at this block: balances moved (a repay halves the debt), or gone
          for (const i of rereads.filter((_, j) => j % markets.length === k)) {
            const p = live.get(`t${i}`);
            if (!p) continue;
            if (i % 3 === 0) {
              index.remove(p.id);
              live.delete(p.id);
            } else {
              const again = { ...p, scaledDebt: p.scaledDebt / 2n };
              index.upsert(again, m);
              live.set(p.id, again);
            }
          }
        }
        expect(index.size).toBe(live.size);
      }),
      { numRuns: process.env.MUTATION_RUN ? 300 : 4_000 },
    );
  });
});
