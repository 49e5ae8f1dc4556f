/**
 * The offline Base fork fixture: real Aave V3 at the real Base addresses,
 * Uniswap V3 at the real router, Safe 1.4.1 at its canonical addresses, and
 * the gateway's own envelopes executed on it.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, http, parseAbi, publicActions, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_ERRORS_ABI } from "@treasury/core/contracts/aave-errors";
import { AAVE_ORACLE_ABI, AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_SCALED_TOKEN_ABI } from "@treasury/core/contracts/aave-tokens";
import { aaveVersionOf } from "@treasury/core/contracts/aave-versions";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { swapRouter02 } from "@treasury/core/contracts/uniswap";
import { devAccount } from "../../fixtures/base-sepolia";
import { AAVE_ORIGIN_VERSION } from "../../fixtures/aave-origin";
import { FORK_PRICES_USD, FORK_RISK, type BaseForkNode } from "../../fixtures/base-fork";
import { sharedFork } from "../helpers/shared-chains";
import http2 from "node:http";
import type { AddressInfo } from "node:net";
import { ChainGateway } from "../../gateway/src/chain/chain-gateway";
import { Preflight } from "../../signer-agent/src/preflight";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { authed, registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
const MINT_ABI = parseAbi(["function mint(address to, uint256 value)", "function deposit() payable"]);

beforeAll(async () => {
  fork = await sharedFork();
});
afterAll(() => fork?.stop());

const clients = (pk: Hex) => {
  const account = privateKeyToAccount(pk);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  return { account, wallet };
};

const fundWithEth = (address: `0x${string}`) => fork.fund(address);
const mintUsdc = (to: `0x${string}`, atomic: bigint) => fork.fund(to, atomic);

describe("the booted fork", () => {
  // first in the file: before any transaction, the latest block is the one the node booted with
  it("answers its latest block by number, with its transactions (viem's receipt wait looks a replacement up there)", async () => {
    const { wallet } = clients(generatePrivateKey());
    const latest = await wallet.getBlockNumber();
    const block = await wallet.getBlock({ blockNumber: latest, includeTransactions: true });
    expect(block.number).toBe(latest);
  });
});

describe("Aave V3 at the real Base addresses", () => {
  it("has the Pool, aTokens and debt tokens where Base has them", async () => {
    const pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
    expect(await pub.getChainId()).toBe(8453);
    for (const sym of ["USDC", "WETH", "cbBTC"] as const) {
      const data = await pub.readContract({
        address: AaveV3Base.POOL,
        abi: AAVE_POOL_ABI,
        functionName: "getReserveData",
        args: [AaveV3Base.ASSETS[sym].UNDERLYING],
      });
      expect(data.aTokenAddress).toBe(AaveV3Base.ASSETS[sym].A_TOKEN);
      expect(data.variableDebtTokenAddress).toBe(AaveV3Base.ASSETS[sym].V_TOKEN);
    }
    for (const address of Object.values(fork.manifest.safe_1_4_1)) {
      expect((await pub.getCode({ address }))?.length ?? 0, address).toBeGreaterThan(2);
    }
    expect((await pub.getCode({ address: swapRouter02(8453) }))!.length).toBeGreaterThan(2);
  });

  it("supply 10 WETH, borrow 50% of its value in USDC: Aave's own collateral, debt, LTV and health factor (FORK_RISK); over-borrowing reverts CollateralCannotCoverNewBorrow()", async () => {
    const { account, wallet } = clients(generatePrivateKey());
    await fundWithEth(account.address);
    const weth = AaveV3Base.ASSETS.WETH.UNDERLYING;
    const usdc = AaveV3Base.ASSETS.USDC.UNDERLYING;
    const risk = FORK_RISK.WETH;
    const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
      const hash = await wallet.writeContract({ address, abi, functionName, args, value } as never);
      const r = await wallet.waitForTransactionReceipt({ hash });
      expect(r.status).toBe("success");
    };
    const borrowed = (10n * FORK_PRICES_USD.WETH * 10n ** 6n) / 2n; // half the collateral's value: under any LTV
    await send(weth, MINT_ABI, "deposit", [], 10n * 10n ** 18n);
    await send(weth, ERC20_ABI, "approve", [AaveV3Base.POOL, 10n * 10n ** 18n]);
    await send(AaveV3Base.POOL, AAVE_POOL_ABI, "supply", [weth, 10n * 10n ** 18n, account.address, 0]);
    await send(AaveV3Base.POOL, AAVE_POOL_ABI, "borrow", [usdc, borrowed, 2n, 0, account.address]);
    // everything at one block: Aave's answer and what it is computed from
    const blockNumber = await wallet.getBlockNumber();
    const read = <T>(address: `0x${string}`, abi: any, functionName: string, args: unknown[] = []) =>
      wallet.readContract({ address, abi, functionName, args, blockNumber } as never) as Promise<T>;
    const [collateral, debt, , liquidationThreshold, ltv, healthFactor] = await read<readonly [bigint, bigint, bigint, bigint, bigint, bigint]>(
      AaveV3Base.POOL,
      AAVE_POOL_ABI,
      "getUserAccountData",
      [account.address],
    );
    const [aWeth, usdcDebt, wethPrice, usdcPrice] = await Promise.all([
      read<bigint>(AaveV3Base.ASSETS.WETH.A_TOKEN, ERC20_ABI, "balanceOf", [account.address]),
      read<bigint>(AaveV3Base.ASSETS.USDC.V_TOKEN, ERC20_ABI, "balanceOf", [account.address]),
      read<bigint>(AaveV3Base.ORACLE, AAVE_ORACLE_ABI, "getAssetPrice", [weth]),
      read<bigint>(AaveV3Base.ORACLE, AAVE_ORACLE_ABI, "getAssetPrice", [usdc]),
    ]);
    expect([wethPrice, usdcPrice]).toEqual([FORK_PRICES_USD.WETH * 10n ** 8n, FORK_PRICES_USD.USDC * 10n ** 8n]);
    // 3.6 (GenericLogic): collateral rounded down, debt up (the protocol's favour); the debt token rounds its balance up
    expect(aWeth).toBeLessThanOrEqual(10n * 10n ** 18n);
    expect(usdcDebt).toBeGreaterThanOrEqual(borrowed);
    expect(collateral).toBe((aWeth * wethPrice) / 10n ** 18n);
    expect(debt).toBe((usdcDebt * usdcPrice + 10n ** 6n - 1n) / 10n ** 6n);
    expect([ltv, liquidationThreshold]).toEqual([BigInt(risk.ltvBps), BigInt(risk.liquidationThresholdBps)]);
    // health factor = collateral x threshold / debt, wadDiv rounding half up, then / 10,000
    expect(healthFactor).toBe((collateral * liquidationThreshold * 10n ** 18n + debt / 2n) / debt / 10_000n);
    // a borrow to a debt between the LTV and the liquidation threshold: the health factor stays above 1, the LTV is passed
    const midway = (collateral * BigInt(risk.ltvBps + risk.liquidationThresholdBps)) / 20_000n;
    await expect(
      wallet.simulateContract({
        address: AaveV3Base.POOL,
        abi: [...AAVE_POOL_ABI, ...AAVE_ERRORS_ABI],
        functionName: "borrow",
        args: [usdc, ((midway - debt) * 10n ** 6n) / usdcPrice, 2n, 0, account.address],
      }),
    ).rejects.toThrow(/reverted\.\s+Error: CollateralCannotCoverNewBorrow\(\)/);
    // a lower ETH price lowers the health factor in proportion
    await fork.setPrice("WETH", Number(FORK_PRICES_USD.WETH) / 2);
    try {
      const after = await wallet.readContract({ address: AaveV3Base.POOL, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [account.address] });
      expect(Number(after[5]) / Number(healthFactor)).toBeCloseTo(0.5, 6);
    } finally {
      await fork.setPrice("WETH", Number(FORK_PRICES_USD.WETH));
    }
  });
});

describe("the fork's Aave version", () => {
  it("the Pool's POOL_REVISION is the manifest's, and the core's table names it as the compiled package's version", async () => {
    const pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
    const revision = Number(await pub.readContract({ address: AaveV3Base.POOL, abi: AAVE_POOL_ABI, functionName: "POOL_REVISION" }));
    expect(revision).toBe(fork.manifest.aave.pool_revision);
    expect(fork.manifest.aave.version).toBe(AAVE_ORIGIN_VERSION);
    expect(aaveVersionOf(revision)).toBe(AAVE_ORIGIN_VERSION.split(".").slice(0, 2).join("."));
  });
});

describe("the gateway's envelopes execute on the fork", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl });
  });
  afterAll(() => gw?.close());

  async function runEnvelope(pk: Hex, env: { steps: { unsigned_transaction: { to: `0x${string}`; data: Hex; value: string; chain_id: number } }[] }) {
    const { wallet } = clients(pk);
    for (const step of env.steps) {
      const hash = await wallet.sendTransaction({
        to: step.unsigned_transaction.to,
        data: step.unsigned_transaction.data,
        value: BigInt(step.unsigned_transaction.value),
        chain: base,
      });
      const r = await wallet.waitForTransactionReceipt({ hash });
      expect(r.status, JSON.stringify(step)).toBe("success");
    }
  }

  it("deposit (supply USDC) and convert (Uniswap V3 swap, then supply cbBTC) as the gateway encodes them", async () => {
    const pk = generatePrivateKey();
    const { account, wallet } = clients(pk);
    await fundWithEth(account.address);
    await mintUsdc(account.address, 10_000n * 10n ** 6n);
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    const api = authed(gw.url, t.key);
    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 1000 });
    expect(deposit.status).toBe(202);
    expect(deposit.body.steps.map((s: any) => s.unsigned_transaction.nonce)).toEqual([0, 1, 2]);
    await runEnvelope(pk, deposit.body);
    // 980 USDC supplied (1,000 less the 2% fee). 3.5+ rounds in the protocol's favour: the scaled balance minted is
    // 980e6 / index rounded down, and the balance read is scaled x index rounded down, so it reads 980e6 or one less
    // (979,999,999 when the index is not a divisor), exactly as these two roundings give it
    const RAY = 10n ** 27n;
    const [mint] = await wallet.getContractEvents({
      address: AaveV3Base.ASSETS.USDC.A_TOKEN,
      abi: AAVE_SCALED_TOKEN_ABI,
      eventName: "Mint",
      args: { onBehalfOf: account.address },
      fromBlock: 0n,
    });
    const at = await wallet.getBlockNumber();
    const [scaled, income, aUsdc] = await Promise.all([
      wallet.readContract({
        address: AaveV3Base.ASSETS.USDC.A_TOKEN,
        abi: AAVE_SCALED_TOKEN_ABI,
        functionName: "scaledBalanceOf",
        args: [account.address],
        blockNumber: at,
      }),
      wallet.readContract({
        address: AaveV3Base.POOL,
        abi: AAVE_POOL_ABI,
        functionName: "getReserveNormalizedIncome",
        args: [AaveV3Base.ASSETS.USDC.UNDERLYING],
        blockNumber: at,
      }),
      wallet.readContract({ address: AaveV3Base.ASSETS.USDC.A_TOKEN, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address], blockNumber: at }),
    ]);
    expect(scaled).toBe((980n * 10n ** 6n * RAY) / mint!.args.index!);
    expect(aUsdc).toBe((scaled * income) / RAY);
    // read in the supply's block, at the index it minted at: never more than supplied, at most one unit less
    if (income === mint!.args.index) expect(980n * 10n ** 6n - aUsdc).toBeOneOf([0n, 1n]);
    await gw.ctx.stores.envelopes.setStatus(deposit.body.tx_id, "relayed", null);

    await gw.ctx.stores.treasuries.updateHoldings(
      t.treasuryId,
      { btcUnits: 0n, ethUnits: 0n, usdcMicro: 5_000n * 10n ** 6n, debtMicro: 0n },
      new Date().toISOString(),
    );
    const convert = await api.post("/api/v1/convert", { amount_usdc: 3000, target: "btc" });
    expect(convert.status).toBe(202);
    await runEnvelope(pk, convert.body);
    const aBtc = await wallet.readContract({ address: AaveV3Base.ASSETS.cbBTC.A_TOKEN, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] });
    // the minimum the swap guaranteed: the pool's quote (QuoterV2) when the envelope was made, less 1%; the sandbox's
    // price would give 4,851,000 (0.04851 cbBTC for 2,940 USDC at 60,000), the pool a little less (its fee and impact)
    const supplied = BigInt(convert.body.steps.at(-1).summary.args.amount);
    expect(aBtc).toBe(supplied);
    expect(supplied).toBeGreaterThan(4_800_000n);
    expect(supplied).toBeLessThan(4_851_000n);
  });
});

describe("market rates read from the fork's Pool", () => {
  it("Base's entry is live from aave_v3_pool_rpc; the others say why they are not", async () => {
    const gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl });
    try {
      const r = await call(gw.url, "GET", "/api/v1/public/market-rates");
      const baseEntry = r.body.rates.find((x: any) => x.chain === "base");
      expect(baseEntry).toMatchObject({ source: "aave_v3_pool_rpc", stale: false, chain_id: 8453 });
      expect(typeof baseEntry.borrow_apy_pct).toBe("number");
      expect(baseEntry.borrow_apy_pct).toBeGreaterThanOrEqual(0);
      expect(baseEntry.block_number).toBeGreaterThan(0);
      expect(r.body.environment).toBe("partial");
    } finally {
      await gw.close();
    }
  });
});

describe("a position read from the fork", () => {
  it("is one HTTP request of six calls once the reserves' aTokens are known, at latest (read again on Anvil after a revert), and equals the reads made one by one", async () => {
    // a counting proxy in front of the fork's RPC
    const seen: number[] = [];
    /** each JSON-RPC call's method and, for an eth_call, the block it reads at */
    const calls: { method: string; block?: unknown }[] = [];
    /** answer the next getUserAccountData with Anvil's mid-mining revert (an arithmetic underflow) instead of the fork's answer */
    let underflowNext = false;
    const target = new URL(fork.rpcUrl);
    const proxy = http2.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const parsed = JSON.parse(body.toString("utf8")) as unknown;
        seen.push(Array.isArray(parsed) ? parsed.length : 1);
        for (const c of (Array.isArray(parsed) ? parsed : [parsed]) as { method: string; params?: unknown[] }[])
          calls.push({ method: c.method, ...(c.method === "eth_call" ? { block: c.params?.[1] } : {}) });
        const out = http2.request(
          { host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json" } },
          (r) => {
            const answer: Buffer[] = [];
            r.on("data", (c: Buffer) => answer.push(c));
            r.on("end", () => {
              let text = Buffer.concat(answer).toString("utf8");
              const requests = (Array.isArray(parsed) ? parsed : [parsed]) as { id: number; method: string; params?: [{ data?: string }] }[];
              const account = requests.find((q) => q.method === "eth_call" && q.params?.[0]?.data?.startsWith("0xbf92857c"));
              if (underflowNext && account && Array.isArray(parsed)) {
                underflowNext = false;
                const panic = `0x4e487b71${(0x11).toString(16).padStart(64, "0")}`;
                text = JSON.stringify(
                  (JSON.parse(text) as { id: number }[]).map((a) =>
                    a.id === account.id
                      ? {
                          jsonrpc: "2.0",
                          id: a.id,
                          error: { code: 3, message: "execution reverted: panic: arithmetic underflow or overflow (0x11)", data: panic },
                        }
                      : a,
                  ),
                );
              }
              res.writeHead(r.statusCode ?? 500, { "content-type": "application/json" });
              res.end(text);
            });
          },
        );
        out.end(body);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      const gateway = new ChainGateway({ base: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` }, 10_000);
      const { account, wallet } = clients(generatePrivateKey());
      await fundWithEth(account.address);
      await mintUsdc(account.address, 250_000_000n);
      const first = await gateway.position("base", account.address);
      seen.length = 0;
      calls.length = 0;
      const again = await gateway.position("base", account.address);
      // one request: getUserAccountData, three aToken balances, the wallet's USDC, and the block number (unless viem's
      // 50 ms block-number cache answers it), at "latest"
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBeGreaterThanOrEqual(5);
      const reads = calls.filter((c) => c.method === "eth_call");
      expect(reads).toHaveLength(5);
      expect(reads.every((c) => c.block === "latest")).toBe(true);

      // Anvil answering mid-mining with an underflow (chain/anvil-reads.ts): the position is read once more
      underflowNext = true;
      seen.length = 0;
      calls.length = 0;
      const retried = await gateway.position("base", account.address);
      expect(retried.holdings).toEqual(first.holdings);
      expect(calls.filter((c) => c.method === "eth_call" && c.block === "latest")).toHaveLength(10);
      expect(again.holdings).toEqual(first.holdings);
      // the same figures read one call at a time
      const pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
      const aUsdc = (
        await pub.readContract({ address: AaveV3Base.POOL, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [AaveV3Base.ASSETS.USDC.UNDERLYING] })
      ).aTokenAddress;
      expect(aUsdc).toBe(AaveV3Base.ASSETS.USDC.A_TOKEN);
      expect(again.holdings.walletUsdc).toBe(250_000_000n);
      expect(again.holdings.aUsdc).toBe(await wallet.readContract({ address: aUsdc, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] }));
      const [collateralBase, debtBase] = await pub.readContract({
        address: AaveV3Base.POOL,
        abi: AAVE_POOL_ABI,
        functionName: "getUserAccountData",
        args: [account.address],
      });
      expect([again.collateralBase, again.debtBase]).toEqual([collateralBase, debtBase]);

      // a relay's simulation is made at "pending" on Anvil: the block the transaction will run in
      calls.length = 0;
      const data = "0x70a08231000000000000000000000000000000000000000000000000000000000000dead" as const;
      await gateway.simulate("base", { from: account.address, to: AaveV3Base.ASSETS.USDC.UNDERLYING, data, value: 0n });
      expect(calls).toEqual([{ method: "eth_call", block: "pending" }]);

      // and the signer agent's preflight judges its call there too (the node asked once what it is)
      calls.length = 0;
      const preflight = new Preflight(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      await preflight.prepare({ chain_id: 8453, to: AaveV3Base.ASSETS.USDC.UNDERLYING, data, value: "0" }, account.address);
      expect(calls[0]).toEqual({ method: "web3_clientVersion" });
      expect(calls.find((c) => c.method === "eth_call")!.block).toBe("pending");
    } finally {
      proxy.close();
    }
  });
});
