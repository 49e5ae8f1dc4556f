/**
 * Native-USDC variable borrow APY of Aave V3 on Ethereum, Arbitrum and Base,
 * read from each Pool (`getReserveData`) over the RPC configured for the
 * chain. No RPC, no code at the Pool, or no answer: the entry says so
 * (`source`, `stale`, `error`) and the document's `environment` is never
 * `live` unless every entry was read from its chain within the cache window.
 */
import { createPublicClient, type PublicClient } from "viem";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS, RATE_CHAINS, type ChainKey } from "@treasury/core/contracts/chains";
import type { Clock } from "../lib/clock";

export const SECONDS_PER_YEAR = 31_536_000;
const RAY = 10n ** 27n;

/**
 * Aave's APY from a per-second-compounded APR given in ray:
 * (1 + apr / secondsPerYear) ^ secondsPerYear - 1, as a percentage.
 */
export function rayAprToApyPct(rateRay: bigint): number {
  const apr = Number((rateRay * 10n ** 12n) / RAY) / 1e12;
  const apy = Math.expm1(SECONDS_PER_YEAR * Math.log1p(apr / SECONDS_PER_YEAR));
  return Math.round(apy * 100 * 10_000) / 10_000;
}

interface Reading {
  apyPct: number;
  observedAt: Date;
  blockNumber: number;
}

export interface MarketRateEntry {
  chain: ChainKey;
  chain_id: number;
  borrow_apy_pct: number | null;
  source: "aave_v3_pool_rpc" | "cache" | "unavailable";
  stale: boolean;
  observed_at: string | null;
  block_number: number | null;
  pool: string;
  asset: string;
  error?: string;
}

export class MarketRatesService {
  private readonly clients = new Map<ChainKey, PublicClient>();
  private readonly cache = new Map<ChainKey, Reading>();
  private readonly lastError = new Map<ChainKey, string>();
  private inflight: Promise<void> | undefined;

  constructor(
    rpcUrls: Partial<Record<ChainKey, string>>,
    private readonly opts: { ttlSeconds: number; timeoutMs: number; clock: Clock },
  ) {
    for (const chain of RATE_CHAINS) {
      const url = rpcUrls[chain];
      if (url) this.clients.set(chain, createPublicClient({ transport: rpcHttp(url, { timeout: opts.timeoutMs, retryCount: 0 }) }));
    }
  }

  /** the last reading of a chain if it is still within the cache window, else null (never fetches) */
  freshApy(chain: ChainKey): number | null {
    const reading = this.cache.get(chain);
    if (!reading) return null;
    return this.opts.clock.now().getTime() - reading.observedAt.getTime() <= this.opts.ttlSeconds * 1000 ? reading.apyPct : null;
  }

  async document() {
    await this.refreshIfDue();
    const rates = RATE_CHAINS.map((chain) => this.entry(chain));
    const fresh = rates.filter((r) => r.source === "aave_v3_pool_rpc").length;
    const environment = fresh === rates.length ? "live" : fresh === 0 ? "unavailable" : "partial";
    return {
      object: "market_rates" as const,
      environment,
      protocol: "aave_v3",
      asset: "USDC" as const,
      rate_type: "variable_borrow_apy" as const,
      rates,
      note:
        "Variable borrow APY of native USDC, read from each chain's Aave V3 Pool (getReserveData, currentVariableBorrowRate compounded per second). " +
        "An entry whose source is not aave_v3_pool_rpc was not read from its chain just now: see stale, observed_at and error.",
    };
  }

  private entry(chain: ChainKey): MarketRateEntry {
    const market = AAVE_MARKETS[chain];
    const reading = this.cache.get(chain);
    const now = this.opts.clock.now().getTime();
    const base = { chain, chain_id: market.chainId, pool: market.pool, asset: market.usdc };
    const error = this.lastError.get(chain);
    if (!reading) {
      return {
        ...base,
        borrow_apy_pct: null,
        source: "unavailable",
        stale: true,
        observed_at: null,
        block_number: null,
        error: error ?? `no RPC configured for ${chain} (set ${chain.toUpperCase()}_RPC_URL)`,
      };
    }
    const fresh = now - reading.observedAt.getTime() <= this.opts.ttlSeconds * 1000;
    return {
      ...base,
      borrow_apy_pct: reading.apyPct,
      source: fresh ? "aave_v3_pool_rpc" : "cache",
      stale: !fresh,
      observed_at: reading.observedAt.toISOString(),
      block_number: reading.blockNumber,
      ...(error && !fresh ? { error } : {}),
    };
  }

  private async refreshIfDue(): Promise<void> {
    const now = this.opts.clock.now().getTime();
    const due = [...this.clients.keys()].filter((chain) => {
      const r = this.cache.get(chain);
      return !r || now - r.observedAt.getTime() > this.opts.ttlSeconds * 1000;
    });
    if (due.length === 0) return;
    // one refresh at a time: concurrent requests wait for the same reads
    this.inflight ??= Promise.all(due.map((chain) => this.read(chain))).then(
      () => undefined,
      () => undefined,
    );
    try {
      await this.inflight;
    } finally {
      this.inflight = undefined;
    }
  }

  private async read(chain: ChainKey): Promise<void> {
    const client = this.clients.get(chain);
    if (!client) return;
    const market = AAVE_MARKETS[chain];
    try {
      const code = await client.getCode({ address: market.pool });
      if (!code || code === "0x") throw new Error(`no contract at the Aave V3 Pool address ${market.pool} on this RPC`);
      const chainId = await client.getChainId();
      if (chainId !== market.chainId) throw new Error(`RPC answers chain id ${chainId}, expected ${market.chainId}`);
      const [reserve, blockNumber] = await Promise.all([
        client.readContract({ address: market.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [market.usdc] }),
        client.getBlockNumber(),
      ]);
      if (reserve.aTokenAddress === "0x0000000000000000000000000000000000000000") {
        throw new Error(`native USDC ${market.usdc} is not listed on this Pool`);
      }
      this.cache.set(chain, {
        apyPct: rayAprToApyPct(reserve.currentVariableBorrowRate),
        observedAt: this.opts.clock.now(),
        blockNumber: Number(blockNumber),
      });
      this.lastError.delete(chain);
    } catch (err) {
      const message = err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : String(err);
      this.lastError.set(chain, message.split("\n")[0]!.slice(0, 300));
    }
  }
}
