/**
 * The gateway's window on a treasury's chain, when an RPC is configured for
 * it (BASE_RPC_URL, ARBITRUM_RPC_URL; the fork in the local stack): the
 * position as Aave reports it, token balances, simulation of a signed
 * transaction before broadcasting it, broadcast and receipt.
 */
import { createPublicClient, type Hex, type PublicClient } from "viem";
import { AnvilReads } from "@treasury/core/chain/anvil-reads";
import type { MarketSnapshot } from "@treasury/core/domain/market-snapshot";
import { oraclePrices, quoteExactIn, readMarket, readReserves } from "@treasury/core/chain/market-reads";
import { quoterV2 } from "@treasury/core/contracts/uniswap-quoter";
import { CONVERT_POOL_FEE } from "@treasury/core/contracts/uniswap";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { AAVE_ORACLE_ABI, AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { aaveVersionOf } from "@treasury/core/contracts/aave-versions";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { HEALTH_SCORE_CAP } from "@treasury/core/domain/position";
import { TreasuryError } from "@treasury/core/lib/errors";
import { describeRevert, revertError } from "@treasury/core/chain/revert";

export interface ChainPosition {
  /** collateral value, micro-USD (Aave's base currency has 8 decimals) */
  collateralMicro: bigint;
  debtMicro: bigint;
  /** the same, exactly as Aave reports them (8 decimals USD) */
  collateralBase: bigint;
  debtBase: bigint;
  liquidationThresholdBps: number;
  /** Aave's health factor (1e18 = 1), max uint with no debt */
  healthFactorWad: bigint;
  blockNumber: bigint;
  holdings: { aUsdc: bigint; aWeth: bigint; aBtc: bigint; walletUsdc: bigint };
}

export { describeRevert, describeRevertData, revertDataOf } from "@treasury/core/chain/revert";

/** wei of ETH in USD at an oracle price of 8 decimals */
/** USD of an amount of wei at the oracle's ETH price (8 decimals): exact to the oracle's 1e-8 USD, one division at the edge */
export const usdOfWei = (wei: bigint, ethPrice: bigint): number => Number((wei * ethPrice) / 10n ** 18n) / 1e8;

/** Aave's health factor as the service's health score: 2 decimals rounded down, capped like the sandbox's */
export function chainHealthScore(p: { healthFactorWad: bigint; debtMicro: bigint }): number {
  if (p.debtMicro === 0n) return HEALTH_SCORE_CAP;
  return Math.min(HEALTH_SCORE_CAP, Number(p.healthFactorWad / 10n ** 16n) / 100);
}

/** the domain's Position of a chain read (null stays null) */
export function chainAsPosition(p: ChainPosition | null) {
  return p ? { collateralMicro: p.collateralMicro, debtMicro: p.debtMicro, liquidationThresholdBps: p.liquidationThresholdBps || 8050 } : null;
}

/** the Aave Pool a chain's market runs, as the chain says: its revision and the version that has it (null: not in the table) */
export interface AavePoolVersion {
  pool: `0x${string}`;
  /** the Pool's POOL_REVISION(); null when the chain did not answer */
  revision: number | null;
  /** the Aave version of that revision (AAVE_POOL_VERSIONS); null when the revision is unknown or unread */
  version: string | null;
}

/** how long a Pool's revision read is kept: an upgrade of the Pool shows within a minute */
const POOL_REVISION_TTL_MS = 60_000;

export class ChainGateway {
  private readonly clients = new Map<TreasuryChain, PublicClient>();
  /**
   * The same RPC with JSON-RPC batching, for reads made together (a position's six calls go in one HTTP
   * request: 7.4-8.0 ms a position on the local fork one by one, 4.7-5.3 ms batched). A single call is not
   * batched: waiting for company costs it a timer turn (1.2-1.8 ms a block number alone, 3.0-3.4 batched).
   */
  private readonly batched = new Map<TreasuryChain, PublicClient>();
  private readonly urls = new Map<TreasuryChain, string>();
  /** per chain: how its reads are made while an Anvil node mines (anvil-reads.ts) */
  private readonly anvilReads = new Map<TreasuryChain, AnvilReads>();

  constructor(rpcUrls: Partial<Record<TreasuryChain, string>>, timeoutMs: number) {
    for (const [chain, url] of Object.entries(rpcUrls) as [TreasuryChain, string | undefined][]) {
      if (url) this.urls.set(chain, url);
      if (!url) continue;
      const transport = (batch: boolean) => rpcHttp(url, { timeout: Math.max(timeoutMs, 10_000), retryCount: 0, batch: batch ? { wait: 0 } : false });
      this.clients.set(chain, createPublicClient({ transport: transport(false), pollingInterval: 50 }));
      this.batched.set(chain, createPublicClient({ transport: transport(true), pollingInterval: 50 }));
      this.anvilReads.set(chain, new AnvilReads(this.clients.get(chain)!));
    }
  }

  /**
   * The aTokens of the market's USDC, WETH and BTC reserves, read once per chain: a reserve's aToken address is
   * set when Aave initializes the reserve and does not change (an upgrade changes the implementation behind
   * it), so a position is one round of calls instead of two (a position was read three times per wallet
   * deposit: bench/README.md, item 23). A failed read is asked again next time.
   */
  private readonly reserveTokens = new Map<TreasuryChain, Promise<readonly [`0x${string}`, `0x${string}`, `0x${string}`]>>();
  private aTokens(chain: TreasuryChain): Promise<readonly [`0x${string}`, `0x${string}`, `0x${string}`]> {
    let known = this.reserveTokens.get(chain);
    if (!known) {
      const c = this.client(chain);
      const m = AAVE_MARKETS[chain];
      const aToken = async (asset: `0x${string}`) => {
        const address = (await c.readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [asset] })).aTokenAddress;
        if (/^0x0{40}$/.test(address)) throw new Error(`the reserve of ${asset} has no aToken on ${chain}`);
        return address;
      };
      known = Promise.all([aToken(m.usdc), aToken(m.weth), aToken(m.btc)] as const);
      this.reserveTokens.set(chain, known);
      known.catch(() => this.reserveTokens.delete(chain));
    }
    return known;
  }

  private readonly poolRevisions = new Map<TreasuryChain, { at: number; revision: Promise<number> }>();
  /** the Aave Pool's revision and version on the chain, read from the Pool (kept POOL_REVISION_TTL_MS; a failed read is asked again) */
  async aavePool(chain: TreasuryChain): Promise<AavePoolVersion> {
    const pool = AAVE_MARKETS[chain].pool;
    let known = this.poolRevisions.get(chain);
    if (!known || performance.now() - known.at > POOL_REVISION_TTL_MS) {
      const revision = this.client(chain)
        .readContract({ address: pool, abi: AAVE_POOL_ABI, functionName: "POOL_REVISION" })
        .then((r) => Number(r));
      known = { at: performance.now(), revision };
      this.poolRevisions.set(chain, known);
      revision.catch(() => this.poolRevisions.delete(chain));
    }
    try {
      const revision = await known.revision;
      return { pool, revision, version: aaveVersionOf(revision) };
    } catch {
      return { pool, revision: null, version: null };
    }
  }

  connected(chain: TreasuryChain): boolean {
    return this.clients.has(chain);
  }

  rpcUrl(chain: TreasuryChain): string | undefined {
    return this.urls.get(chain);
  }

  client(chain: TreasuryChain): PublicClient {
    const c = this.clients.get(chain);
    if (!c) throw new Error(`no RPC configured for ${chain}`);
    return c;
  }

  async position(chain: TreasuryChain, wallet: `0x${string}`): Promise<ChainPosition> {
    const c = this.batched.get(chain) ?? this.client(chain);
    const m = AAVE_MARKETS[chain];
    try {
      const aTokens = await this.aTokens(chain);
      const balanceOf = (token: `0x${string}`) => c.readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [wallet] });
      // one round of calls: the account, the block, and the four balances (on Anvil, read again if they reverted: anvil-reads.ts)
      const [account, blockNumber, aUsdc, aWeth, aBtc, walletUsdc] = await this.anvilReads
        .get(chain)!
        .consistent(() =>
          Promise.all([
            c.readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [wallet] }),
            c.getBlockNumber(),
            balanceOf(aTokens[0]),
            balanceOf(aTokens[1]),
            balanceOf(aTokens[2]),
            balanceOf(m.usdc),
          ]),
        );
      const [collateralBase, debtBase, , liquidationThreshold, , healthFactor] = account;
      return {
        collateralMicro: collateralBase / 100n,
        debtMicro: debtBase / 100n,
        collateralBase,
        debtBase,
        liquidationThresholdBps: Number(liquidationThreshold),
        healthFactorWad: healthFactor,
        blockNumber,
        holdings: { aUsdc, aWeth, aBtc, walletUsdc },
      };
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the treasury's position on ${chain}: ${describeRevert(err)}`);
    }
  }

  /**
   * What an action planned on the chain's own figures needs of a wallet (exit): its exact USDC debt (interest to
   * this block), its aToken balances, its own USDC, the oracle's prices (micro-USDC per whole unit) and each
   * reserve's liquidation threshold; one round of reads.
   */
  async marketSnapshot(chain: TreasuryChain, wallet: `0x${string}`): Promise<MarketSnapshot> {
    const m = AAVE_MARKETS[chain];
    const c = this.batched.get(chain) ?? this.client(chain);
    try {
      const [usdcR, wethR, btcR] = await readReserves(c, m.pool, [m.usdc, m.weth, m.btc]);
      const read = await readMarket(
        c,
        {
          pool: m.pool,
          oracle: m.oracle,
          usdc: m.usdc,
          weth: m.weth,
          btc: m.btc,
          aUsdc: usdcR!.aToken,
          aWeth: wethR!.aToken,
          aBtc: btcR!.aToken,
          variableDebtUsdc: usdcR!.variableDebtToken,
        },
        wallet,
      );
      return {
        debt: read.debtUsdc,
        walletUsdc: read.wallet.usdc,
        supplied: { USDC: read.supplied.usdc, ETH: read.supplied.weth, BTC: read.supplied.btc },
        price: { USDC: read.prices.usdc / 100n, ETH: read.prices.weth / 100n, BTC: read.prices.btc / 100n },
        // a supply that is not collateral counts for nothing toward the health factor: its threshold is 0 here
        lt: {
          USDC: read.collateral.usdc ? read.reserves.usdc.liquidationThresholdBps : 0n,
          ETH: read.collateral.weth ? read.reserves.weth.liquidationThresholdBps : 0n,
          BTC: read.collateral.btc ? read.reserves.btc.liquidationThresholdBps : 0n,
        },
      };
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the wallet's market on ${chain}: ${describeRevert(err)}`);
    }
  }

  /** the market's USDC, ETH and BTC prices from its Aave oracle, in micro-USDC per whole unit (the oracle's 8-decimal USD / 100) */
  async pricesMicro(chain: TreasuryChain): Promise<Record<"USDC" | "ETH" | "BTC", bigint>> {
    const m = AAVE_MARKETS[chain];
    try {
      const [usdc, eth, btc] = await oraclePrices(this.client(chain), m.oracle, [m.usdc, m.weth, m.btc]);
      return { USDC: usdc! / 100n, ETH: eth! / 100n, BTC: btc! / 100n };
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the oracle's prices on ${chain}: ${describeRevert(err)}`);
    }
  }

  /**
   * What selling `units` of one of the market's tokens (USDC, ETH, BTC) for another returns now: Uniswap's
   * QuoterV2 (an eth_call of the swap in the 0.05% pool), exactly what SwapRouter02 would return in the same
   * state. On a chain without a known QuoterV2, the oracle's value of the units.
   */
  async quote(chain: TreasuryChain, from: "USDC" | "ETH" | "BTC", to: "USDC" | "ETH" | "BTC", units: bigint): Promise<bigint> {
    const m = AAVE_MARKETS[chain];
    const token = { USDC: m.usdc, ETH: m.weth, BTC: m.btc };
    const decimals = { USDC: 6n, ETH: 18n, BTC: 8n };
    try {
      let quoter: `0x${string}` | undefined;
      try {
        quoter = quoterV2(m.chainId);
      } catch {
        quoter = undefined;
      }
      if (quoter) return await quoteExactIn(this.client(chain), quoter, token[from], token[to], CONVERT_POOL_FEE, units);
      const prices = await this.pricesMicro(chain);
      return (units * prices[from] * 10n ** decimals[to]) / (prices[to] * 10n ** decimals[from]);
    } catch (err) {
      if (err instanceof TreasuryError) throw err;
      throw new TreasuryError("chain_unavailable", `could not quote ${from} for ${to} on ${chain}: ${describeRevert(err)}`);
    }
  }

  /** ETH's price from the market's Aave oracle (USD, 8 decimals): what gas costs the automation key */
  ethPrice(chain: TreasuryChain): Promise<bigint> {
    const m = AAVE_MARKETS[chain];
    return this.client(chain).readContract({ address: m.oracle, abi: AAVE_ORACLE_ABI, functionName: "getAssetPrice", args: [m.weth] });
  }

  /** a Safe's nonce (the next Safe transaction's) */
  async safeNonce(chain: TreasuryChain, safe: `0x${string}`): Promise<bigint> {
    try {
      return await this.client(chain).readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" });
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the Safe ${safe}'s nonce on ${chain}: ${describeRevert(err)}`);
    }
  }

  async pendingNonce(chain: TreasuryChain, address: `0x${string}`): Promise<number> {
    return this.client(chain).getTransactionCount({ address, blockTag: "pending" });
  }

  /**
   * Run the transaction as an eth_call from its signer; a revert is a typed 422 with the decoded reason
   * (`revert_reason`, and `aave_error` for Aave's): Aave's refusal of a borrow is `borrow_refused`, a call that
   * would leave the position liquidatable `would_be_liquidatable`, any other revert `transaction_would_revert`.
   */
  async simulate(chain: TreasuryChain, tx: { from: `0x${string}`; to: `0x${string}`; data: Hex; value: bigint }): Promise<void> {
    // on Anvil at the block the transaction will run in (anvil-reads.ts)
    const at = await this.anvilReads.get(chain)!.simulationBlock();
    try {
      await this.client(chain).call({ account: tx.from, to: tx.to, data: tx.data, value: tx.value, ...at });
    } catch (err) {
      throw revertError(err, tx.data, "transaction_would_revert", `the signed transaction would revert on ${chain}`);
    }
  }

  /**
   * Send a signed transaction. Resolves once the node accepted it; a node
   * that refuses it throws a typed 422. Whether an ambiguous failure (a
   * timeout) reached the node is for the caller to ask with `transaction`.
   */
  async send(chain: TreasuryChain, signed: Hex): Promise<Hex> {
    try {
      return await this.client(chain).sendRawTransaction({ serializedTransaction: signed });
    } catch (err) {
      throw new TreasuryError("broadcast_rejected", `the ${chain} node refused the transaction: ${describeRevert(err)}`, {
        revert_reason: describeRevert(err),
      });
    }
  }

  /** the receipt of a transaction, waiting at most `timeoutMs` (0: look once); null when it is not mined by then */
  async receipt(chain: TreasuryChain, hash: Hex, timeoutMs: number): Promise<{ blockNumber: bigint; status: "success" | "reverted"; gasUsed: bigint } | null> {
    try {
      // a node that mines on receipt (the sandbox's fork) has it at once: one look first, then the wait
      const r =
        (await this.client(chain)
          .getTransactionReceipt({ hash })
          .catch((err: unknown) => {
            if (timeoutMs > 0 && (err as { name?: string }).name === "TransactionReceiptNotFoundError") return null;
            throw err;
          })) ?? (await this.client(chain).waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: timeoutMs, retryCount: 0 }));
      return { blockNumber: r.blockNumber, status: r.status, gasUsed: r.gasUsed };
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === "WaitForTransactionReceiptTimeoutError" || name === "TransactionReceiptNotFoundError") return null;
      throw new TreasuryError("chain_unavailable", `could not read the receipt of ${hash} on ${chain}: ${describeRevert(err)}`);
    }
  }

  /** is the transaction known to the node (pending or mined)? */
  async known(chain: TreasuryChain, hash: Hex): Promise<boolean> {
    try {
      await this.client(chain).getTransaction({ hash });
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === "TransactionNotFoundError") return false;
      throw new TreasuryError("chain_unavailable", `could not look up ${hash} on ${chain}: ${describeRevert(err)}`);
    }
  }

  /** the count of the address's mined transactions (its next nonce once nothing is pending) */
  async minedNonce(chain: TreasuryChain, address: `0x${string}`): Promise<number> {
    return this.client(chain).getTransactionCount({ address, blockTag: "latest" });
  }
}
