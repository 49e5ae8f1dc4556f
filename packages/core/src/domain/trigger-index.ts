/**
 * The trigger index: which watched Aave V3 positions may be at or under their health trigger at a block, without
 * looking at every position. Pure (no client, no I/O); the engine feeds it the market of each block (`MarketAt`)
 * and the scaled balances it read (`WatchedPosition`), and confirms its candidates on chain.
 *
 * Aave's health factor as 3.6 computes it (GenericLogic.calculateUserAccountData; aave-math.ts `accountData`):
 *   C_i = floor(rayMulFloor(s_i, L_i) * p_i / 10^d_i)        (collateral i in base currency; only if enabled)
 *   D   = ceil(rayMulCeil(s_D, I_D) * p_USDC / 10^6)           (variable USDC debt)
 *   HF  = wadDiv(Σ C_i LT_i, D) / 10^4,   max uint without debt.
 * Aave 3.0 to 3.3 rounded otherwise (rayMul half up, D floored, HF = wadDiv(percentMul(C, avgLT), D) with the
 * average threshold floored); the bound below holds for both.
 *
 * Why it never misses. Write W_i(m) = p_i L_i (LT_i - 1)⁺ 10^(36-d_i) and UNIT = 10^27 * 10^40 (one base-currency
 * unit on W's scale). A rounding moves its result by less than one unit, and L_i, I_D >= 1 ray, so (either version)
 *   C_i >= (s_i - 1) p_i L_i / (ray 10^d_i) - 1,       D <= (s_D + 1) I_D p_USDC / (ray 10^d_USDC) + 1,
 *   C * avgLT >= Σ C_i LT_i - C = Σ C_i (LT_i - 1),    HF >= X * 1e18 / D - 2 with X >= Σ C_i (LT_i - 1) / 10^4 - 1;
 * with lhs(m) = Σ (s_i - 1) W_i(m), rhs(m) = (T + 2)(s_D + 1) I_D p_USDC 10^(22-d_USDC), T the trigger (wad), and
 * slack = 4 UNIT + (T + 2) UNIT / 1e18 (3 floors of C_i, 1 of X, D's last unit):
 *   HF(m) < T  ==>  lhs(m) - slack < rhs(m)                                          (`mayCross`, the exact filter)
 * Across markets: lhs is a sum of non-negative terms, each scaled from a reference market R to m by W_i(m)/W_i(R),
 * so lhs(m) >= ρ lhs(R) with ρ = min over the position's assets of W_i(m)/W_i(R) (each asset may move its own way;
 * an index that grows or a price that rises only raises ρ), and rhs(m) = γ rhs(R) with γ = I_D p_USDC at m over R.
 * The index keeps ρ >= 1/2 (it re-bases on R := m otherwise), so HF(m) < T  ==>  ρ lhs(R) - slack < γ rhs(R)
 *   ==>  key = (lhs(R) - 2 slack) / rhs(R) < γ / ρ.
 * Keys are fixed per position (computed at R); γ/ρ is one threshold per group of positions holding the same assets.
 * A group is an array sorted by key: a block's candidates are a binary search, then `mayCross` at m on the prefix
 * under the threshold (keys rounded down, thresholds up: the fixed-point comparison keeps the implication). A quiet
 * block visits O(log N) entries per group; when the prefix holds many entries `mayCross` drops (the market drifted
 * from R), the index re-bases on m, O(N log N). Beyond Aave's answer it lets through positions within a basis point
 * of their average threshold (LT - 1 for LT: 0.012% of the health factor) and a few base units, which the on-chain
 * confirmation drops. Debt-free positions are never candidates; positions in an e-mode always are (their category's
 * figures differ). Markets are read, never changed (the reference is kept as given).
 */
import { accountData, MAX_UINT256, RAY, WAD, type AccountReserve } from "./aave-math";

export type IndexAsset = "USDC" | "WETH" | "cbBTC";
export const INDEX_ASSETS: readonly IndexAsset[] = ["USDC", "WETH", "cbBTC"];

export interface MarketAt {
  /** Aave oracle, base currency (8 decimals USD) */
  prices: Record<IndexAsset, bigint>;
  /** ray (1e27): getReserveNormalizedIncome */
  liquidityIndex: Record<IndexAsset, bigint>;
  /** ray: getReserveNormalizedVariableDebt(USDC) */
  debtIndex: bigint;
  liquidationThresholdBps: Record<IndexAsset, bigint>;
  decimals: Record<IndexAsset, number>;
}

export interface WatchedPosition {
  /** treasury id */
  id: string;
  /** scaled aToken balance, only assets enabled as collateral */
  scaledCollateral: Partial<Record<IndexAsset, bigint>>;
  /** scaled variable USDC debt */
  scaledDebt: bigint;
  /** health trigger, 1e18 = 1.0 */
  triggerWad: bigint;
  /** a position in an e-mode: always a candidate */
  eMode?: boolean;
}

export { MAX_UINT256, RAY, WAD };
const UNIT = RAY * 10n ** 40n; // one base-currency unit on the scale of W (module comment)
const FIXED = 1n << 64n; // fixed-point scale of keys and thresholds

const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const held = (p: WatchedPosition, a: IndexAsset): bigint => p.scaledCollateral[a] ?? 0n;

/** Aave's health factor (wad) of `p` under `m`, as 3.6's GenericLogic.calculateUserAccountData computes it */
export function aaveHealthWad(p: WatchedPosition, m: MarketAt): bigint {
  const reserve = (a: IndexAsset): AccountReserve => ({
    scaledCollateral: held(p, a),
    scaledDebt: a === "USDC" ? p.scaledDebt : 0n,
    liquidityIndex: m.liquidityIndex[a],
    debtIndex: m.debtIndex,
    price: m.prices[a],
    decimals: m.decimals[a],
    ltvBps: 1n, // the LTV does not enter the health factor
    liquidationThresholdBps: m.liquidationThresholdBps[a],
  });
  return accountData(INDEX_ASSETS.map(reserve)).healthFactorWad;
}

/** W_i(m): what one scaled unit of `a` adds to lhs (module comment) */
function weight(m: MarketAt, a: IndexAsset): bigint {
  const lt = m.liquidationThresholdBps[a];
  return lt > 1n ? m.prices[a] * m.liquidityIndex[a] * (lt - 1n) * 10n ** BigInt(36 - m.decimals[a]) : 0n;
}
const lhs = (p: WatchedPosition, m: MarketAt): bigint => INDEX_ASSETS.reduce((sum, a) => (held(p, a) > 1n ? sum + (held(p, a) - 1n) * weight(m, a) : sum), 0n);
const debtFactor = (m: MarketAt): bigint => m.debtIndex * m.prices.USDC * 10n ** BigInt(22 - m.decimals.USDC);
const rhs = (p: WatchedPosition, m: MarketAt): bigint => (p.triggerWad + 2n) * (p.scaledDebt + 1n) * debtFactor(m);
const slack = (p: WatchedPosition): bigint => 4n * UNIT + (p.triggerWad + 2n) * RAY * 10n ** 22n;

/** necessary for Aave's HF(p, m) < trigger (module comment); false without debt */
export function mayCross(p: WatchedPosition, m: MarketAt): boolean {
  return p.scaledDebt > 0n && lhs(p, m) - slack(p) < rhs(p, m);
}

function checkMarket(m: MarketAt): void {
  const fits = (a: IndexAsset) =>
    m.liquidityIndex[a] >= RAY && m.prices[a] >= 0n && m.liquidationThresholdBps[a] >= 0n && m.liquidationThresholdBps[a] <= 10_000n;
  const ok = m.prices.USDC > 0n && m.debtIndex >= RAY && INDEX_ASSETS.every((a) => fits(a) && m.decimals[a] >= 0 && m.decimals[a] <= 22);
  if (!ok) throw new RangeError("market out of range: a USDC price of 0, an index under one ray, a threshold over 100% or decimals over 22");
}

interface Entry {
  id: string;
  key: bigint;
}
interface Indexed {
  position: WatchedPosition;
  /** bit i set: holds INDEX_ASSETS[i] */
  group: number;
  entry?: Entry;
}

const before = (x: Entry, y: Entry): boolean => x.key < y.key || (x.key === y.key && x.id < y.id);
/** the first index in `list` whose entry is not before `e`, and how many entries the search looked at */
function lowerBound(list: Entry[], e: Entry): { at: number; probes: number } {
  let [lo, hi, probes] = [0, list.length, 0];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    probes++;
    if (before(list[mid]!, e)) lo = mid + 1;
    else hi = mid;
  }
  return { at: lo, probes };
}

export class TriggerIndex {
  private readonly positions = new Map<string, Indexed>();
  private readonly groups = new Map<number, Entry[]>();
  private readonly eModes = new Set<string>();
  private reference?: MarketAt;
  /** entries the last `candidates` call looked at (binary-search probes and the prefix it checked) */
  visited = 0;
  /** how many times the index re-based its keys on a new reference market */
  rebases = 0;

  get size(): number {
    return this.positions.size;
  }

  has(id: string): boolean {
    return this.positions.has(id);
  }

  /** (re)indexes `p`; `at` is the market it was read at (the index re-bases on it if the reference has drifted) */
  upsert(p: WatchedPosition, at: MarketAt): void {
    checkMarket(at);
    this.remove(p.id);
    const group = INDEX_ASSETS.reduce((g, a, i) => (held(p, a) > 0n ? g | (1 << i) : g), 0);
    const indexed: Indexed = { position: p, group };
    this.positions.set(p.id, indexed);
    if (p.eMode && p.scaledDebt > 0n) this.eModes.add(p.id);
    if (!this.reference || this.drifted(at)) return this.rebase(at);
    this.place(indexed, this.reference);
  }

  remove(id: string): void {
    const indexed = this.positions.get(id);
    this.positions.delete(id);
    this.eModes.delete(id);
    if (!indexed?.entry) return;
    const list = this.groups.get(indexed.group)!;
    list.splice(lowerBound(list, indexed.entry).at, 1);
  }

  /** ids at or past their crossing under `m`: a superset of those whose Aave health factor is under their trigger */
  candidates(m: MarketAt): string[] {
    checkMarket(m);
    this.visited = 0;
    if (this.reference && this.drifted(m)) this.rebase(m);
    const out = [...this.eModes];
    let dropped = 0;
    for (const [group, list] of this.groups) {
      const { at: end, probes } = lowerBound(list, { key: this.threshold(group, m), id: "" });
      this.visited += probes + end;
      for (let i = 0; i < end; i++) {
        const { position } = this.positions.get(list[i]!.id)!;
        if (mayCross(position, m)) out.push(position.id);
        else dropped++;
      }
    }
    if (dropped > Math.max(64, this.size / 16)) this.rebase(m);
    return out;
  }

  /** Aave's health factor (wad) of one indexed position under `m` (an e-mode position: with the reserves' thresholds) */
  healthWad(id: string, m: MarketAt): bigint {
    const indexed = this.positions.get(id);
    if (!indexed) throw new RangeError(`position ${id} is not indexed`);
    return aaveHealthWad(indexed.position, m);
  }

  /** some asset's weight fell under half its weight at the reference (ρ < 1/2), or to nothing */
  private drifted(m: MarketAt): boolean {
    return INDEX_ASSETS.some((a) => weight(m, a) * 2n < weight(this.reference!, a));
  }

  /** γ/ρ of a group, in fixed point rounded up (0 when none of its assets weighs anything at the reference) */
  private threshold(group: number, m: MarketAt): bigint {
    const r = this.reference!;
    let t = 0n;
    INDEX_ASSETS.forEach((a, i) => {
      if ((group & (1 << i)) === 0 || weight(r, a) === 0n) return;
      const [num, den] = [FIXED * debtFactor(m) * weight(r, a), debtFactor(r) * weight(m, a)];
      const ratio = (num + den - 1n) / den; // rounded up
      if (ratio > t) t = ratio;
    });
    return t;
  }

  /** the position's key at the reference `r` (none without debt or in an e-mode) */
  private entryFor(p: WatchedPosition, r: MarketAt): Entry | undefined {
    if (p.scaledDebt === 0n || p.eMode) return undefined;
    return { id: p.id, key: floorDiv((lhs(p, r) - 2n * slack(p)) * FIXED, rhs(p, r)) };
  }

  private listOf(group: number): Entry[] {
    const list = this.groups.get(group) ?? [];
    this.groups.set(group, list);
    return list;
  }

  private place(indexed: Indexed, r: MarketAt): void {
    indexed.entry = this.entryFor(indexed.position, r);
    if (!indexed.entry) return;
    const list = this.listOf(indexed.group);
    list.splice(lowerBound(list, indexed.entry).at, 0, indexed.entry);
  }

  private rebase(m: MarketAt): void {
    this.reference = m;
    this.rebases++;
    this.groups.clear();
    for (const indexed of this.positions.values()) {
      indexed.entry = this.entryFor(indexed.position, m);
      if (indexed.entry) this.listOf(indexed.group).push(indexed.entry);
    }
    for (const list of this.groups.values()) list.sort((x, y) => (before(x, y) ? -1 : before(y, x) ? 1 : 0));
  }
}
