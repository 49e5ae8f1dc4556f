/**
 * packages/core/src/chain/market-reads.ts against the offline Base fork: QuoterV2 at its real Base address quotes what
 * SwapRouter02 then pays, the oracle prices are the feeds', the reserves' risk parameters are the fork's, and a
 * user's debt and balances are exact token units.
 */
import { createPublicClient, createTestClient, createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { aTokenBalance, aTokenMintScaled, mulDivCeil } from "@treasury/core/domain/aave-math";
import { CONVERT_POOL_FEE, SWAP_ROUTER_02_ABI } from "@treasury/core/contracts/uniswap";
import { QUOTER_V2_ABI, quoterV2 } from "@treasury/core/contracts/uniswap-quoter";
import { FORK_PRICES_USD, FORK_RISK, type BaseForkNode } from "../../fixtures/base-fork";
import { sharedFork } from "../helpers/shared-chains";
import {
  balancesOf,
  decodeReserveConfiguration,
  oraclePrices,
  quoteExactIn,
  quoteExactOut,
  readMarket,
  readReserves,
  type MarketAddresses,
} from "@treasury/core/chain/market-reads";

let fork: BaseForkNode;
let market: MarketAddresses;
/** JSON-RPC requests the batching client sent, and the calls in each */
const requests: number[] = [];
let reader: ReturnType<typeof makeReader>;

const makeReader = (url: string) =>
  createPublicClient({
    chain: base,
    transport: http(url, {
      batch: { wait: 0 },
      onFetchRequest: async (req) => {
        const body = (await req.clone().json()) as unknown;
        requests.push(Array.isArray(body) ? body.length : 1);
      },
    }),
  });

const E18 = 10n ** 18n;
const E8 = 10n ** 8n;
const E6 = 10n ** 6n;
const TOKEN_ABI = parseAbi(["function deposit() payable", "function mint(address account, uint256 value) returns (bool)"]);
const FEED_ABI = parseAbi(["function latestAnswer() view returns (int256)"]);

beforeAll(async () => {
  fork = await sharedFork();
  const m = fork.manifest;
  market = {
    pool: m.aave.pool,
    oracle: m.aave.oracle,
    usdc: m.tokens.USDC,
    weth: m.tokens.WETH,
    btc: m.tokens.cbBTC,
    aUsdc: m.reserves.USDC.a_token,
    aWeth: m.reserves.WETH.a_token,
    aBtc: m.reserves.cbBTC.a_token,
    variableDebtUsdc: m.reserves.USDC.variable_debt_token,
  };
  reader = makeReader(fork.rpcUrl);
});
afterAll(() => fork?.stop());

async function funded() {
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
    const hash = await wallet.writeContract({ address, abi, functionName, args, value } as never);
    const receipt = await wallet.waitForTransactionReceipt({ hash });
    expect(receipt.status, functionName).toBe("success");
    return receipt;
  };
  return { account, wallet, send };
}

describe("QuoterV2 on the fork", () => {
  it("is at its real Base address (the manifest's and sdk-core's), over the fork's factory and WETH", async () => {
    const quoter = fork.manifest.uniswap_v3.quoter_v2;
    expect(quoter).toBe("0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a");
    expect(quoterV2(8453)).toBe(quoter);
    expect(() => quoterV2(42161)).toThrow(/no known Uniswap QuoterV2/);
    expect(await reader.readContract({ address: quoter, abi: QUOTER_V2_ABI, functionName: "factory" })).toBe(fork.manifest.uniswap_v3.factory);
    expect(await reader.readContract({ address: quoter, abi: QUOTER_V2_ABI, functionName: "WETH9" })).toBe(market.weth);
  });

  // first in the file's swaps: the pools as the fixture left them
  it("quotes sells of WETH and cbBTC for USDC below the oracle by the 0.05% fee and the price impact of the full-range pools", async () => {
    const q = fork.manifest.uniswap_v3.quoter_v2;
    const [, pWeth, pBtc] = await oraclePrices(reader, market.oracle, [market.usdc, market.weth, market.btc]);
    const rows: { sell: string; quote: bigint; oracle: bigint }[] = [];
    for (const [label, token, amount, price, decimals] of [
      ["1 WETH", market.weth, 1n * E18, pWeth!, 18n],
      ["5 WETH", market.weth, 5n * E18, pWeth!, 18n],
      ["10 WETH", market.weth, 10n * E18, pWeth!, 18n],
      ["0.1 cbBTC", market.btc, E8 / 10n, pBtc!, 8n],
      ["0.5 cbBTC", market.btc, E8 / 2n, pBtc!, 8n],
    ] as const) {
      const quote = await quoteExactIn(reader, q, token, market.usdc, CONVERT_POOL_FEE, amount);
      // the oracle's value in USDC units: amount * price(8 dec) / 10^decimals / 10^8 * 10^6
      const oracle = (amount * price * E6) / (10n ** decimals * E8);
      rows.push({ sell: label, quote, oracle });
    }
    console.log(
      rows
        .map(
          (r) => `${r.sell}: quote ${r.quote} vs oracle ${r.oracle} USDC units (${((Number(r.oracle - r.quote) / Number(r.oracle)) * 100).toFixed(3)}% under)`,
        )
        .join("\n"),
    );
    // the cbBTC pool holds 50 cbBTC against 3,000,000 USDC as the WETH pool 1,000 WETH: 0.5 cbBTC moves it as 10 WETH do
    expect(rows.map((r) => r.quote)).toEqual([2_995_505_991n, 14_917_947_557n, 29_688_265_783n, 5_985_035_913n, 29_688_265_783n]);
    for (const r of rows) {
      expect(r.quote).toBeLessThan(r.oracle);
      // never better than the fee allows, and within 1.1% below the oracle for these sizes
      expect(r.quote * 10_000n).toBeLessThanOrEqual(r.oracle * 9_995n);
      expect(r.quote * 1000n).toBeGreaterThan(r.oracle * 989n);
    }
    expect(await quoteExactIn(reader, q, market.weth, market.usdc, CONVERT_POOL_FEE, 0n)).toBe(0n);
    // a pool that does not exist: the quote reverts
    await expect(quoteExactIn(reader, q, market.weth, market.btc, CONVERT_POOL_FEE, E18)).rejects.toThrow();
  });

  it("quotes 1 WETH -> USDC to the unit of what SwapRouter02.exactInputSingle pays right after (and an exact-out quote buys it back)", async () => {
    const q = fork.manifest.uniswap_v3.quoter_v2;
    const router = fork.manifest.uniswap_v3.swap_router_02;
    const { account, wallet, send } = await funded();
    await send(market.weth, TOKEN_ABI, "deposit", [], E18);
    await send(market.weth, ERC20_ABI, "approve", [router, E18]);
    const quoted = await quoteExactIn(reader, q, market.weth, market.usdc, CONVERT_POOL_FEE, E18);
    // the minimum out is the quote itself: one unit less paid would revert "Too little received"
    const params = {
      tokenIn: market.weth,
      tokenOut: market.usdc,
      fee: CONVERT_POOL_FEE,
      recipient: account.address,
      amountIn: E18,
      amountOutMinimum: quoted,
      sqrtPriceLimitX96: 0n,
    };
    const { result: simulated } = await wallet.simulateContract({ address: router, abi: SWAP_ROUTER_02_ABI, functionName: "exactInputSingle", args: [params] });
    expect(simulated).toBe(quoted);
    await send(router, SWAP_ROUTER_02_ABI, "exactInputSingle", [params]);
    const [usdcAfter, wethAfter] = await balancesOf(reader, [market.usdc, market.weth], account.address);
    expect(usdcAfter).toBe(quoted);
    expect(wethAfter).toBe(0n);

    // the pool moved: the next 1 WETH is quoted lower, and buying the USDC back costs at most what the
    // sale paid plus the fee and the price impact both ways
    const next = await quoteExactIn(reader, q, market.weth, market.usdc, CONVERT_POOL_FEE, E18);
    expect(next).toBeLessThan(quoted);
    const cost = await quoteExactOut(reader, q, market.usdc, market.weth, CONVERT_POOL_FEE, E18);
    expect(cost).toBeGreaterThan(quoted);
    expect(cost * 1000n).toBeLessThan(quoted * 1002n);
    expect(await quoteExactOut(reader, q, market.usdc, market.weth, CONVERT_POOL_FEE, 0n)).toBe(0n);

    // cbBTC -> USDC the same way
    const btcIn = E8 / 10n;
    await send(market.btc, TOKEN_ABI, "mint", [account.address, btcIn]);
    await send(market.btc, ERC20_ABI, "approve", [router, btcIn]);
    const btcQuote = await quoteExactIn(reader, q, market.btc, market.usdc, CONVERT_POOL_FEE, btcIn);
    await send(router, SWAP_ROUTER_02_ABI, "exactInputSingle", [{ ...params, tokenIn: market.btc, amountIn: btcIn, amountOutMinimum: btcQuote }]);
    expect((await balancesOf(reader, [market.usdc], account.address))[0]).toBe(quoted + btcQuote);
  });
});

describe("the market's Aave figures", () => {
  it("prices equal the feeds (8 decimals) and follow setPrice", async () => {
    const assets = [market.usdc, market.weth, market.btc] as const;
    const feeds = [fork.manifest.price_feeds.USDC, fork.manifest.price_feeds.WETH, fork.manifest.price_feeds.cbBTC];
    const answers = await Promise.all(feeds.map((f) => reader.readContract({ address: f, abi: FEED_ABI, functionName: "latestAnswer" })));
    expect(await oraclePrices(reader, market.oracle, assets)).toEqual(answers);
    expect(answers).toEqual([FORK_PRICES_USD.USDC * E8, FORK_PRICES_USD.WETH * E8, FORK_PRICES_USD.cbBTC * E8]);
    expect(await oraclePrices(reader, market.oracle, [])).toEqual([]);
    await fork.setPrice("WETH", 2_512.34);
    try {
      expect(await oraclePrices(reader, market.oracle, [market.weth])).toEqual([251_234_000_000n]);
    } finally {
      await fork.setPrice("WETH", 3_000);
    }
    // a zero price is refused, not returned
    await fork.setPrice("cbBTC", 0);
    try {
      await expect(oraclePrices(reader, market.oracle, assets)).rejects.toThrow();
    } finally {
      await fork.setPrice("cbBTC", 60_000);
    }
  });

  it("each reserve's LTV and liquidation threshold are the fork's (FORK_RISK, the manifest)", async () => {
    const [usdc, weth, btc] = await readReserves(reader, market.pool, [market.usdc, market.weth, market.btc]);
    for (const [r, risk, decimals, aToken] of [
      [usdc!, FORK_RISK.USDC, 6n, market.aUsdc],
      [weth!, FORK_RISK.WETH, 18n, market.aWeth],
      [btc!, FORK_RISK.cbBTC, 8n, market.aBtc],
    ] as const) {
      expect(r).toMatchObject({
        ltvBps: BigInt(risk.ltvBps),
        liquidationThresholdBps: BigInt(risk.liquidationThresholdBps),
        liquidationBonusBps: BigInt(risk.liquidationBonusBps),
        decimals,
        active: true,
        frozen: false,
        paused: false,
        borrowingEnabled: risk.borrowable,
        aToken,
      });
    }
    expect(usdc!.variableDebtToken).toBe(market.variableDebtUsdc);
    // a token that is not a reserve
    await expect(readReserves(reader, market.pool, ["0x000000000000000000000000000000000000dEaD"])).rejects.toThrow(/not a reserve/);
  });

  it("decodes a configuration word bit by bit", () => {
    const word = 8000n | (8250n << 16n) | (10500n << 32n) | (18n << 48n) | (1n << 56n) | (1n << 58n) | (1n << 60n) | (0xffffn << 64n);
    expect(decodeReserveConfiguration(word)).toEqual({
      ltvBps: 8000n,
      liquidationThresholdBps: 8250n,
      liquidationBonusBps: 10500n,
      decimals: 18n,
      active: true,
      frozen: false,
      borrowingEnabled: true,
      paused: true,
    });
    expect(decodeReserveConfiguration(1n << 57n)).toMatchObject({ frozen: true, active: false, ltvBps: 0n });
  });

  it("after supplying 10 WETH and borrowing 12,000 USDC: exact debt, aTokens and wallet balances in one request; repay(max) takes the debt read at pending", async () => {
    const { account, send } = await funded();
    const pool = market.pool;
    const empty = await readMarket(reader, market, account.address);
    expect(empty.supplied).toEqual({ usdc: 0n, weth: 0n, btc: 0n });
    expect(empty.debtUsdc).toBe(0n);
    expect(empty.wallet).toEqual({ usdc: 0n, weth: 0n, btc: 0n });

    await send(market.weth, TOKEN_ABI, "deposit", [], 11n * E18);
    await send(market.weth, ERC20_ABI, "approve", [pool, 10n * E18]);
    await send(pool, AAVE_POOL_ABI, "supply", [market.weth, 10n * E18, account.address, 0]);
    await send(market.btc, TOKEN_ABI, "mint", [account.address, 25n * 10n ** 6n]);
    const borrowed = await send(pool, AAVE_POOL_ABI, "borrow", [market.usdc, 12_000n * E6, 2n, 0, account.address]);

    // at the borrow's block, one JSON-RPC request of 12 calls
    // 3.6 mints the supply's scaled balance rounded down and reads it back rounded down: 10 WETH, or a wei under
    const wethIndex = await reader.readContract({
      address: pool,
      abi: AAVE_POOL_ABI,
      functionName: "getReserveNormalizedIncome",
      args: [market.weth],
      blockNumber: borrowed.blockNumber,
    });
    const wethSupplied = aTokenBalance(aTokenMintScaled(10n * E18, wethIndex), wethIndex);
    expect(wethSupplied === 10n * E18 || wethSupplied === 10n * E18 - 1n).toBe(true);
    requests.length = 0;
    const at = await readMarket(reader, market, account.address, { blockNumber: borrowed.blockNumber });
    expect(requests).toEqual([12]);
    expect(at).toEqual({
      prices: { usdc: FORK_PRICES_USD.USDC * E8, weth: FORK_PRICES_USD.WETH * E8, btc: FORK_PRICES_USD.cbBTC * E8 },
      reserves: at.reserves,
      supplied: { usdc: 0n, weth: wethSupplied, btc: 0n },
      debtUsdc: 12_000n * E6,
      wallet: { usdc: 12_000n * E6, weth: 1n * E18, btc: 25n * 10n ** 6n },
      // the WETH supplied is collateral (Aave enables it on a first supply); nothing else is supplied
      collateral: { usdc: false, weth: true, btc: false },
    });
    expect(at.reserves.weth).toMatchObject({ ltvBps: BigInt(FORK_RISK.WETH.ltvBps), liquidationThresholdBps: BigInt(FORK_RISK.WETH.liquidationThresholdBps) });

    // the same figures as Aave's account data: debt in base units is the USDC debt times its price, rounded up
    const [collateralBase, debtBase] = await reader.readContract({
      address: pool,
      abi: AAVE_POOL_ABI,
      functionName: "getUserAccountData",
      args: [account.address],
      blockNumber: borrowed.blockNumber,
    });
    expect(collateralBase).toBe((at.supplied.weth * at.prices.weth) / E18);
    expect(debtBase).toBe(mulDivCeil(at.debtUsdc, at.prices.usdc, E6));

    // 100 blocks (200 s) later: interest accrues on the debt, in whole USDC units
    const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
    await test.mine({ blocks: 100 });
    const later = await readMarket(reader, market, account.address);
    expect(later.debtUsdc).toBeGreaterThan(12_000n * E6);
    expect(later.supplied.weth).toBeGreaterThanOrEqual(wethSupplied);

    // a whale borrows 4,000,000 of the pool's 5,000,000 USDC: the rate rises so a 2 s block adds whole units to the debt
    const whale = await funded();
    await test.setBalance({ address: whale.account.address, value: 3_000n * E18 });
    await whale.send(market.weth, TOKEN_ABI, "deposit", [], 2_000n * E18);
    await whale.send(market.weth, ERC20_ABI, "approve", [pool, 2_000n * E18]);
    await whale.send(pool, AAVE_POOL_ABI, "supply", [market.weth, 2_000n * E18, whale.account.address, 0]);
    await whale.send(pool, AAVE_POOL_ABI, "borrow", [market.usdc, 4_000_000n * E6, 2n, 0, whale.account.address]);

    // repay(max) takes exactly the debt read at "pending" (the block it runs in), more than the debt at "latest"
    await fork.fund(account.address, 1_000n * E6);
    await send(market.usdc, ERC20_ABI, "approve", [pool, 2n ** 256n - 1n]);
    const [latest, pending] = await Promise.all([
      readMarket(reader, market, account.address),
      readMarket(reader, market, account.address, { blockTag: "pending" }),
    ]);
    expect(pending.debtUsdc).toBeGreaterThan(latest.debtUsdc);
    const before = (await balancesOf(reader, [market.usdc], account.address))[0]!;
    await send(pool, AAVE_POOL_ABI, "repay", [market.usdc, 2n ** 256n - 1n, 2n, account.address]);
    const after = await readMarket(reader, market, account.address);
    expect(after.debtUsdc).toBe(0n);
    expect(before - after.wallet.usdc).toBe(pending.debtUsdc);
    console.log(
      `debt: ${at.debtUsdc} at the borrow's block, ${later.debtUsdc} 100 blocks later, ${latest.debtUsdc} at latest and ${pending.debtUsdc} at pending at 80% utilization; repay(max) took ${before - after.wallet.usdc}`,
    );
  });

  it("refuses a market whose aToken or debt token is not the pool's", async () => {
    const wrong = { ...market, aWeth: market.aBtc };
    await expect(readMarket(reader, wrong, market.pool)).rejects.toThrow(/WETH aToken/);
    await expect(readMarket(reader, { ...market, variableDebtUsdc: market.aUsdc }, market.pool)).rejects.toThrow(/variable debt token/);
  });
});
