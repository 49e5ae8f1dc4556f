/**
 * The safety rail against Aave 3.6 on the offline Base fork, as a property over random positions: WETH and/or cbBTC
 * collateral at random oracle prices (to the 1e-8 USD), a USDC debt anywhere up to Aave's own borrowing limit, then
 * up to a year of interest. On the position
 * as the gateway reads it (ChainGateway.position), the gateway's own planner (Planner.plan, the check every execution
 * mode makes) states a `safe_amount` for a borrow and for a withdrawal; then
 *
 *   - the planner accepts `safe_amount` and refuses `safe_amount` + one unit of what a request can state (1
 *     micro-USDC; 0.000001 WETH or cbBTC) with ltv_limit_exceeded: the rail's figure is its exact boundary;
 *   - 3.6's Pool executes a borrow and a withdrawal of `safe_amount` (in a later block: interest accrued between
 *     the read and the transaction), and its own limit is above the rail's (availableBorrowsBase, HF >= 1 after).
 *
 * Seeded (FC_SEED replays another seed); each run reverts the chain to where it started.
 */
import fc from "fast-check";
import { createTestClient, createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { mulDivCeil, WAD } from "@treasury/core/domain/aave-math";
import { ASSETS } from "@treasury/core/domain/assets";
import { parseDecimal } from "@treasury/core/domain/money";
import { PRESET_NAMES, PRESETS, type PresetName } from "@treasury/core/domain/presets";
import { TreasuryError } from "@treasury/core/lib/errors";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ChainGateway } from "../../gateway/src/chain/chain-gateway";
import { Planner } from "../../gateway/src/services/execution/planner";
import type { Db } from "../../gateway/src/store/db";
import { FeeStore } from "../../gateway/src/store/fee-store";
import { openDatabase } from "../../gateway/src/store/open-database";
import type { TreasuryRecord } from "../../gateway/src/store/treasury-store";

const TOKEN_ABI = parseAbi(["function deposit() payable", "function mint(address account, uint256 value) returns (bool)"]);
const ORACLE_ABI = parseAbi(["function getAssetPrice(address asset) view returns (uint256)"]);
const RUNS = Number(process.env.FC_NUM_RUNS ?? 40);
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 42;

let fork: BaseForkNode;
let db: Db;
let gateway: ChainGateway;
let planner: Planner;
let test: ReturnType<typeof createTestClient>;

beforeAll(async () => {
  fork = await startBaseFork();
  db = await openDatabase({ file: ":memory:" });
  gateway = new ChainGateway({ base: fork.rpcUrl }, 10_000);
  planner = new Planner({ stores: { fees: new FeeStore(db) } } as never, gateway);
  test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
});
afterAll(async () => {
  await db?.close();
  await fork?.stop();
});

/** the planner's answer: null when it accepts, the safe amount's text (in the request's unit) when the rail refuses */
async function railAnswer(t: TreasuryRecord, request: Parameters<Planner["plan"]>[1]): Promise<string | null> {
  const chain = await gateway.position("base", t.walletAddress);
  try {
    await planner.plan(t, request, chain);
    return null;
  } catch (err) {
    if (!(err instanceof TreasuryError) || err.code !== "ltv_limit_exceeded") throw err;
    return String(err.fields.safe_amount);
  }
}

interface Case {
  /** oracle prices, 1e-8 USD */
  prices: { WETH: bigint; cbBTC: bigint };
  weth: bigint | null;
  btc: bigint | null;
  /** the debt, per mille of Aave's available borrows */
  debtPerMille: number;
  seconds: number;
  preset: PresetName;
  /** which collateral the withdrawal takes */
  withdrawBtc: boolean;
}

const cases = fc
  .record({
    prices: fc.record({ WETH: fc.bigInt(1_000n * 10n ** 8n, 5_000n * 10n ** 8n), cbBTC: fc.bigInt(20_000n * 10n ** 8n, 120_000n * 10n ** 8n) }),
    weth: fc.option(fc.bigInt(10n ** 16n, 30n * 10n ** 18n), { freq: 4 }),
    btc: fc.option(fc.bigInt(100_000n, 150_000_000n), { freq: 4 }),
    debtPerMille: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 999 })),
    seconds: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 365 * 24 * 3600 })),
    preset: fc.constantFrom(...PRESET_NAMES),
    withdrawBtc: fc.boolean(),
  })
  .filter((c) => c.weth !== null || c.btc !== null);

async function run(c: Case) {
  const { manifest: m } = fork;
  const pool = m.aave.pool;
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
    const hash = await wallet.writeContract({ address, abi, functionName, args, value } as never);
    return (await wallet.waitForTransactionReceipt({ hash })).status;
  };
  await fork.setPrice("WETH", Number(c.prices.WETH) / 1e8);
  await fork.setPrice("cbBTC", Number(c.prices.cbBTC) / 1e8);
  const accountData = async () =>
    (await wallet.readContract({ address: pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [account.address] })) as readonly bigint[];

  if (c.weth) {
    await send(m.tokens.WETH, TOKEN_ABI, "deposit", [], c.weth);
    await send(m.tokens.WETH, ERC20_ABI, "approve", [pool, c.weth]);
    expect(await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.WETH, c.weth, account.address, 0])).toBe("success");
  }
  if (c.btc) {
    await send(m.tokens.cbBTC, TOKEN_ABI, "mint", [account.address, c.btc]);
    await send(m.tokens.cbBTC, ERC20_ABI, "approve", [pool, c.btc]);
    expect(await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.cbBTC, c.btc, account.address, 0])).toBe("success");
  }
  const borrowed = ((await accountData())[2]! * BigInt(c.debtPerMille)) / 1000n / 100n; // base (8 decimals) to micro-USDC at 1 USD
  if (borrowed > 0n) expect(await send(pool, AAVE_POOL_ABI, "borrow", [m.tokens.USDC, borrowed, 2n, 0, account.address])).toBe("success");
  if (c.seconds > 0) await test.increaseTime({ seconds: c.seconds });
  await test.mine({ blocks: 1 });

  const t = { id: "trs_rail", chain: "base", preset: c.preset, walletAddress: account.address } as unknown as TreasuryRecord;
  const chain = await gateway.position("base", account.address);

  // borrow: asked for more than the collateral is worth (always above the ceiling), the rail states its safe amount
  const said = await railAnswer(t, { action: "borrow", amountMicro: chain.collateralMicro + 1n, params: {} });
  expect(said).not.toBeNull();
  const safeBorrow = parseDecimal(said!, 6);
  expect(await railAnswer(t, { action: "borrow", amountMicro: safeBorrow + 1n, params: {} })).toBe(said);
  if (safeBorrow > 0n) {
    expect(await railAnswer(t, { action: "borrow", amountMicro: safeBorrow, params: {} })).toBeNull();
    // Aave's own limit is above the rail's, and its Pool lends it (a block later)
    const [, , available] = await accountData();
    const usdcPrice = (await wallet.readContract({ address: m.aave.oracle, abi: ORACLE_ABI, functionName: "getAssetPrice", args: [m.tokens.USDC] })) as bigint;
    expect(mulDivCeil(safeBorrow, usdcPrice, 10n ** 6n)).toBeLessThanOrEqual(available!);
    const before = (await test.request({ method: "evm_snapshot" as never })) as `0x${string}`;
    expect(await send(pool, AAVE_POOL_ABI, "borrow", [m.tokens.USDC, safeBorrow, 2n, 0, account.address])).toBe("success");
    await test.request({ method: "evm_revert" as never, params: [before] as never });
  }

  // withdraw: all of one collateral asked for; the rail accepts it or states the most it accepts, in the asset's units
  const symbol = (c.withdrawBtc && c.btc) || !c.weth ? "BTC" : "ETH";
  const decimals = ASSETS[symbol].decimals;
  const step = 10n ** BigInt(decimals - 6);
  const supplied = symbol === "ETH" ? chain.holdings.aWeth : chain.holdings.aBtc;
  const asked = (supplied / step) * step;
  const refused = await railAnswer(t, { action: "withdraw", amountMicro: 0n, params: { asset: symbol, units: asked.toString() } });
  const safeUnits = refused === null ? asked : parseDecimal(refused, decimals);
  if (refused !== null) {
    expect(safeUnits).toBeLessThan(asked);
    expect(await railAnswer(t, { action: "withdraw", amountMicro: 0n, params: { asset: symbol, units: safeUnits.toString() } })).toBeNull();
    expect(await railAnswer(t, { action: "withdraw", amountMicro: 0n, params: { asset: symbol, units: (safeUnits + step).toString() } })).toBe(refused);
  }
  if (safeUnits > 0n) {
    const before = (await test.request({ method: "evm_snapshot" as never })) as `0x${string}`;
    const token = symbol === "ETH" ? m.tokens.WETH : m.tokens.cbBTC;
    expect(await send(pool, AAVE_POOL_ABI, "withdraw", [token, safeUnits, account.address])).toBe("success");
    const [, debt, , , , health] = await accountData();
    if (debt! > 0n) expect(health!).toBeGreaterThanOrEqual(WAD);
    await test.request({ method: "evm_revert" as never, params: [before] as never });
  }
  return { safeBorrow, safeUnits, refused: refused !== null, ceiling: PRESETS[c.preset].ceiling };
}

it("safe_amount for a borrow and a withdrawal: 3.6's Pool executes it, one unit more the gateway refuses", { timeout: 120_000 }, async () => {
  const started = Date.now();
  const seen = { borrowZero: 0, withdrawRefused: 0, runs: 0 };
  await fc.assert(
    fc.asyncProperty(cases, async (c) => {
      const start = (await test.request({ method: "evm_snapshot" as never })) as `0x${string}`;
      const r = await run(c).finally(() => test.request({ method: "evm_revert" as never, params: [start] as never }));
      seen.runs++;
      if (r.safeBorrow === 0n) seen.borrowZero++;
      if (r.refused) seen.withdrawRefused++;
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `rail property: ${seen.runs} positions in ${seconds.toFixed(1)} s; borrow safe_amount 0 in ${seen.borrowZero}, withdrawal refused in ${seen.withdrawRefused}`,
  );
  // both sides of the rail were met: positions over the ceiling, and withdrawals it cut down
  expect(seen.withdrawRefused).toBeGreaterThan(0);
  expect(seconds).toBeLessThan(60);
});
