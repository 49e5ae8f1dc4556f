/**
 * The exit's last wei on Aave 3.6 (the offline Base fork), as the core encodes it (exit-sizing.ts fromSuppliedUsdc,
 * exit-plan.ts withQuotes, exit-steps.ts exitSteps): a wallet with WETH collateral, a USDC debt and some USDC
 * supplied, planned on its market (ChainGateway.marketSnapshot) after interest has accrued, executed a day later
 * (more interest between prepare and execute), ends with no debt, no aToken and no flag in its configuration, in
 * each of the three ways the supplied USDC repays: all of the debt (repayWithATokens max, the debt covered with
 * room), all of the supply (max, under the debt), and all of the debt but one unit (within the room for interest).
 * 3.6 rounds the debt up and aToken balances down (TokenMath); repay(max) and withdraw(max) burn whole scaled
 * balances, so nothing is left either side.
 */
import { createTestClient, createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { exitSteps } from "@treasury/core/actions/exit-steps";
import { withQuotes } from "@treasury/core/actions/exit-plan";
import { bufferOf, fromSuppliedUsdc } from "@treasury/core/actions/exit-sizing";
import { stepContext } from "@treasury/core/actions/steps";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ChainGateway } from "../../gateway/src/chain/chain-gateway";

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;
const DAY = 24 * 3600;
const TOKEN_ABI = parseAbi([
  "function deposit() payable",
  "function scaledBalanceOf(address user) view returns (uint256)",
  "function totalSupply() view returns (uint256)",
]);

let fork: BaseForkNode;
let gateway: ChainGateway;
let test: ReturnType<typeof createTestClient>;

beforeAll(async () => {
  fork = await startBaseFork();
  gateway = new ChainGateway({ base: fork.rpcUrl }, 10_000);
  test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
  // the USDC market busy (80% of its supply borrowed): interest is many units a day
  const whale = privateKeyToAccount(generatePrivateKey());
  await fork.fund(whale.address);
  await test.setBalance({ address: whale.address, value: 10_000n * E18 });
  const w = createWalletClient({ account: whale, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  const pool = fork.manifest.aave.pool;
  const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
    const receipt = await w.waitForTransactionReceipt({ hash: await w.writeContract({ address, abi, functionName, args, value } as never) });
    expect(receipt.status, functionName).toBe("success");
  };
  await send(fork.manifest.tokens.WETH, TOKEN_ABI, "deposit", [], 5_000n * E18);
  await send(fork.manifest.tokens.WETH, ERC20_ABI, "approve", [pool, 5_000n * E18]);
  await send(pool, AAVE_POOL_ABI, "supply", [fork.manifest.tokens.WETH, 5_000n * E18, whale.address, 0]);
  const supplied = (await w.readContract({ address: fork.manifest.reserves.USDC.a_token, abi: TOKEN_ABI, functionName: "totalSupply" })) as bigint;
  const share = (supplied * 8n) / 10n;
  await send(pool, AAVE_POOL_ABI, "borrow", [fork.manifest.tokens.USDC, share < 10_000_000n * E6 ? share : 10_000_000n * E6, 2n, 0, whale.address]);
});
afterAll(() => fork?.stop());

/** `usdc` decides the supplied USDC from the debt read after a month: the three ways fromSuppliedUsdc takes */
async function exitAfterInterest(usdc: (debt: bigint) => bigint) {
  const m = fork.manifest;
  const pool = m.aave.pool;
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address, 50_000n * E6);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  const send = async (address: `0x${string}`, abi: any, functionName: string, args: unknown[], value?: bigint) => {
    const receipt = await wallet.waitForTransactionReceipt({ hash: await wallet.writeContract({ address, abi, functionName, args, value } as never) });
    expect(receipt.status, functionName).toBe("success");
  };
  const balance = (token: `0x${string}`) =>
    wallet.readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] }) as Promise<bigint>;

  await send(m.tokens.WETH, TOKEN_ABI, "deposit", [], 2n * E18);
  await send(m.tokens.WETH, ERC20_ABI, "approve", [pool, 2n * E18]);
  await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.WETH, 2n * E18, account.address, 0]);
  await send(pool, AAVE_POOL_ABI, "borrow", [m.tokens.USDC, 2_000n * E6, 2n, 0, account.address]);
  await test.increaseTime({ seconds: 30 * DAY });
  await test.mine({ blocks: 1 });
  // the USDC supplied, sized on the debt now (the next block's interest is a few units: the cases keep room for it)
  const debtNow = await balance(m.reserves.USDC.variable_debt_token);
  const target = usdc(debtNow);
  await send(m.tokens.USDC, ERC20_ABI, "approve", [pool, target]);
  await send(pool, AAVE_POOL_ABI, "supply", [m.tokens.USDC, target, account.address, 0]);

  // prepare: the plan on the wallet's market
  const snapshot = await gateway.marketSnapshot("base", account.address);
  const supplied = fromSuppliedUsdc(snapshot);
  const plan = await withQuotes(snapshot, false, () => Promise.reject(new Error("no swap: the wallet's USDC covers the debt")));
  const steps = exitSteps(stepContext("base", account.address), plan);

  // execute a day later: the debt has grown again
  await test.increaseTime({ seconds: DAY });
  await test.mine({ blocks: 1 });
  expect(await balance(m.reserves.USDC.variable_debt_token)).toBeGreaterThan(snapshot.debt);
  for (const s of steps) {
    const receipt = await wallet.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: s.to, data: s.data }) });
    expect(receipt.status, `${s.summary.contract}.${s.summary.function}`).toBe("success");
  }

  // nothing left: no debt, no aToken (scaled balances too), no flag
  const scaled = (token: `0x${string}`) => wallet.readContract({ address: token, abi: TOKEN_ABI, functionName: "scaledBalanceOf", args: [account.address] });
  const left = await Promise.all([
    balance(m.reserves.USDC.variable_debt_token),
    scaled(m.reserves.USDC.variable_debt_token),
    ...(["USDC", "WETH", "cbBTC"] as const).flatMap((a) => [balance(m.reserves[a].a_token), scaled(m.reserves[a].a_token)]),
  ]);
  expect(left).toEqual([0n, 0n, 0n, 0n, 0n, 0n, 0n, 0n]);
  const config = await wallet.readContract({ address: pool, abi: AAVE_POOL_ABI, functionName: "getUserConfiguration", args: [account.address] });
  expect(config.data).toBe(0n);
  expect(await balance(m.tokens.WETH)).toBe(2n * E18); // the collateral back in the wallet, to the wei (no interest at 0% use)
  return { snapshot, supplied, plan };
}

it("the supplied USDC covers the debt with room: repayWithATokens(max) closes it, withdraw(max) takes the rest", async () => {
  const { snapshot, supplied, plan } = await exitAfterInterest((debt) => 2n * debt);
  expect(snapshot.supplied.USDC).toBeGreaterThanOrEqual(snapshot.debt + bufferOf(snapshot.debt));
  expect([supplied.call, plan.repayWithATokens, plan.approval, plan.withdrawAll]).toEqual(["max", "max", "0", ["USDC", "ETH"]]);
});

it("the supplied USDC is under the debt: repayWithATokens(max) takes all of it, repay(max) the rest from the wallet", async () => {
  const { snapshot, supplied, plan } = await exitAfterInterest((debt) => debt / 2n);
  expect(snapshot.supplied.USDC).toBeLessThan(snapshot.debt);
  expect([supplied.call, plan.repayWithATokens, plan.withdrawAll]).toEqual(["max", "max", ["ETH"]]);
  expect(BigInt(plan.approval)).toBe(snapshot.debt - snapshot.supplied.USDC + bufferOf(snapshot.debt));
});

it("the supplied USDC is within the room for interest: all of the debt but one unit from it, the last from the wallet", async () => {
  // one unit over the debt at the supply (3.6: the aToken balance may read one under what was supplied)
  const { snapshot, supplied, plan } = await exitAfterInterest((debt) => debt + bufferOf(debt) / 2n);
  expect(snapshot.supplied.USDC).toBeGreaterThanOrEqual(snapshot.debt);
  expect(snapshot.supplied.USDC).toBeLessThan(snapshot.debt + bufferOf(snapshot.debt));
  expect([supplied.call, plan.repayWithATokens, plan.withdrawAll]).toEqual([snapshot.debt - 1n, String(snapshot.debt - 1n), ["USDC", "ETH"]]);
  expect(BigInt(plan.approval)).toBe(1n + bufferOf(snapshot.debt));
});
