/**
 * Price paths for the protection scenarios: one price of ETH and one of BTC
 * per block (2 s, as on Base), in whole USD. Pure and seeded: the same
 * arguments give the same path.
 */
export const BLOCK_SECONDS = 2;

export interface PricePath {
  name: string;
  /** what the path is, for a reader of the report */
  description: string;
  eth: number[];
  btc: number[];
}

const START = { eth: 3_000, btc: 60_000 };
const round2 = (x: number) => Math.round(x * 100) / 100;

/** a linear move from `from` to `to` (fractions of the start price) over `blocks` blocks, both assets alike */
function linear(from: number, to: number, blocks: number): number[] {
  return Array.from({ length: blocks }, (_, i) => from + ((to - from) * (i + 1)) / blocks);
}

function path(name: string, description: string, factors: number[]): PricePath {
  return { name, description, eth: factors.map((f) => round2(START.eth * f)), btc: factors.map((f) => round2(START.btc * f)) };
}

/** -50% over an hour (1,800 blocks) */
export const slide = (): PricePath => path("slide", "-50% over an hour, steadily", linear(1, 0.5, 3_600 / BLOCK_SECONDS));

/** -40% in five minutes (150 blocks), then flat for a minute */
export const fastDrop = (): PricePath =>
  path("fast-drop", "-40% in five minutes, then flat for a minute", [...linear(1, 0.6, 300 / BLOCK_SECONDS), ...linear(0.6, 0.6, 60 / BLOCK_SECONDS)]);

/** -35% in one minute and back in the next (a wick) */
export const wick = (): PricePath => path("wick", "-35% in one minute and back within the next", [...linear(1, 0.65, 30), ...linear(0.65, 1, 30)]);

/** mulberry32: a small seeded generator (uniform in [0, 1)) */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * A seeded random walk with jumps, ten minutes long (300 blocks): a downward drift, a volatility of about
 * 0.6% per block, and with probability 2% per block a jump down of 5-12%; ETH and BTC move together with
 * their own noise. Kept within [25%, 150%] of the start.
 */
export function randomWithJumps(seed: number, blocks = 300): PricePath {
  const rand = seeded(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  let eth = 1;
  let btc = 1;
  const e: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < blocks; i++) {
    const common = -0.0015 + 0.006 * normal();
    const jump = rand() < 0.02 ? -(0.05 + 0.07 * rand()) : 0;
    eth = Math.min(1.5, Math.max(0.25, eth * Math.exp(common + jump + 0.002 * normal())));
    btc = Math.min(1.5, Math.max(0.25, btc * Math.exp(common + jump + 0.002 * normal())));
    e.push(round2(START.eth * eth));
    b.push(round2(START.btc * btc));
  }
  return { name: `random-${seed}`, description: `seeded random walk with jumps (seed ${seed}), ten minutes`, eth: e, btc: b };
}

/** a path by its name: slide, fast-drop, wick, random-<seed> */
export function pathNamed(name: string): PricePath {
  if (name === "slide") return slide();
  if (name === "fast-drop") return fastDrop();
  if (name === "wick") return wick();
  const random = /^random-(\d+)$/.exec(name);
  if (random) return randomWithJumps(Number(random[1]));
  throw new Error(`no price path named ${name} (slide, fast-drop, wick, random-<seed>)`);
}
