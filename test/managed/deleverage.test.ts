/**
 * Protection from collateral, end to end on the Base fork: a managed Safe with
 * WETH supplied and its borrowed USDC spent (nothing idle to repay with) falls
 * to a health factor of 1.02, the market (oracle and Uniswap pool) at the new
 * price; the engine deleverages through the ProtectionModule in one
 * transaction with Aave's flash liquidity, to the park target, recorded as
 * auto_deleverage with no fee; Aave's own liquidationCall then finds nothing to
 * liquidate. The same fall on an unprotected Safe is liquidated (the test can
 * fail).
 */
import { encodeFunctionData, getAddress, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createWalletClient, http, publicActions } from "viem";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_ERRORS_ABI } from "@treasury/core/contracts/aave-errors";
import { AAVE_LIQUIDATION_ABI, AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { moveMarket } from "../../fixtures/arbitrageur";
import { FORK_RISK, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { Operator, PROTECTION_MODULE_ABI } from "../../signer-agent/src/operator";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { authed, registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
let engine: ProtectionEngine;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const m = AAVE_MARKETS.base;

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** a Safe with 10 WETH supplied and 15,000 USDC borrowed, the USDC spent (sent away) */
async function borrowerSafe() {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(10n * 10n ** 18n);
  await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
  await operator.execSafe([
    {
      to: m.usdc,
      data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: ["0x000000000000000000000000000000000000dEaD", 15_000n * 10n ** 6n] }),
    },
  ]);
  return { operator, safe };
}

const client = () =>
  createWalletClient({ account: privateKeyToAccount(generatePrivateKey()), chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(
    publicActions,
  );
const account = async (who: `0x${string}`) => {
  const [collateral, debt, , , , hf] = await client().readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [who] });
  return { collateral, debt, hf, ltvBps: collateral === 0n ? 0n : (debt * 10_000n) / collateral };
};

/** the ETH price (whole USD) at which 10 WETH against 15,000 USDC stand at a health factor of 1.02 */
const CRASH_USD = Math.round((1.02 * 15_000 * 10_000) / (10 * FORK_RISK.WETH.liquidationThresholdBps));

async function protectAndJudge(tenant: { treasuryId: string }, api: ReturnType<typeof authed>, safe: `0x${string}`, twinSafe: `0x${string}`) {
  // the market falls to the ETH price at which HF = 10 x price x WETH's threshold / 15,000 = 1.02 (1,843 USD at Base's 83%)
  await moveMarket(fork, "WETH", CRASH_USD);
  const before = await account(safe);
  expect(Number(before.hf) / 1e18).toBeCloseTo(1.02, 2);
  expect(await client().readContract({ address: m.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: [safe] })).toBe(0n);

  const [result] = (await engine.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
  expect(result!.outcome, result!.detail).toBe("executed");
  expect(result!.detail).toMatch(/flash-borrowed/);
  const after = await account(safe);
  // LTV from 80.9% to the 25% park target (the module refuses under it), health far above the trigger
  expect(after.ltvBps).toBeGreaterThanOrEqual(2500n);
  expect(after.ltvBps).toBeLessThan(2600n);
  expect(Number(after.hf) / 1e18).toBeGreaterThan(3);

  // one transaction: the module's Deleveraged event, its flash premium, no fee to the service
  const delegation = (await api.get("/api/v1/delegation")).body;
  const act = delegation.protection_actions.at(-1);
  expect(act).toMatchObject({ status: "executed" });
  expect(act.tx_hashes).toHaveLength(1);
  const receipt = await client().getTransactionReceipt({ hash: act.tx_hashes[0] });
  const [event] = parseEventLogs({ abi: PROTECTION_MODULE_ABI, logs: receipt.logs, eventName: "Deleveraged" });
  expect(event!.args.flashAmount).toBeGreaterThan(0n);
  // Aave's percentMul: 5 bps, rounded half up
  expect(event!.args.flashPremium).toBe((event!.args.flashAmount * 5n + 5_000n) / 10_000n);
  // sold at no worse than 1% under the oracle
  const oracleValue = (event!.args.collateralSold * BigInt(CRASH_USD) * 10n ** 6n) / 10n ** 18n;
  expect(event!.args.usdcReceived * 10_000n).toBeGreaterThanOrEqual(oracleValue * 9_900n);
  const audit = (await api.get("/api/v1/audit")).body.data;
  expect(audit.at(-1)).toMatchObject({ action: "auto_deleverage", trigger: "auto_deleverage", fee_usdc: 0, fee_bearing: false });
  expect(audit.at(-1).amount_usdc).toBeCloseTo(Number(event!.args.usdcReceived - event!.args.flashPremium) / 1e6, 5);
  // nothing idle left behind by the module: no allowance to the router or the Pool
  expect(await client().readContract({ address: m.weth, abi: ERC20_ABI, functionName: "allowance", args: [safe, receipt.to!] })).toBe(0n);

  // the market falls further, to 1,500: the protected Safe stays healthy, the twin is under water
  await moveMarket(fork, "WETH", 1_500);
  expect(Number((await account(safe)).hf) / 1e18).toBeGreaterThan(2);
  const twinBefore = await account(twinSafe);
  expect(twinBefore.hf).toBeLessThan(10n ** 18n);

  // a liquidator with Aave's own liquidationCall: the twin loses collateral with the bonus, the protected Safe cannot be touched
  const liquidator = createWalletClient({
    account: privateKeyToAccount(generatePrivateKey()),
    chain: base,
    transport: http(fork.rpcUrl),
    pollingInterval: 20,
  }).extend(publicActions);
  await fork.fund(liquidator.account.address, 20_000n * 10n ** 6n);
  await liquidator.waitForTransactionReceipt({
    hash: await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] }),
  });
  await expect(
    liquidator.simulateContract({
      address: m.pool,
      abi: [...AAVE_LIQUIDATION_ABI, ...AAVE_ERRORS_ABI],
      functionName: "liquidationCall",
      args: [m.weth, m.usdc, safe, 2n ** 255n, false],
    }),
  ).rejects.toThrow(/HealthFactorNotBelowThreshold\(\)/);
  const paid = async () => client().readContract({ address: m.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: [liquidator.account.address] });
  const deficit = () => client().readContract({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "getReserveDeficit", args: [m.usdc] });
  const [usdcBefore, deficitBefore] = [await paid(), await deficit()];
  const liquidated = await liquidator.writeContract({
    address: m.pool,
    abi: AAVE_LIQUIDATION_ABI,
    functionName: "liquidationCall",
    args: [m.weth, m.usdc, twinSafe, 2n ** 255n, false],
  });
  expect((await liquidator.waitForTransactionReceipt({ hash: liquidated })).status).toBe("success");
  const twinAfter = await account(twinSafe);
  // the twin paid the liquidation bonus: it lost more collateral than the USDC the liquidator repaid for it
  const repaidBase = (usdcBefore - (await paid())) * 100n;
  expect(repaidBase).toBeGreaterThan(0n);
  expect(twinBefore.collateral - twinAfter.collateral).toBeGreaterThan(repaidBase);
  // under the threshold of 0.95 Aave 3.6 closes the whole position: at 1,500 USD the collateral (15,000 USD) is
  // short of the debt plus the bonus, so all of it is seized and the debt left over is written off as deficit
  expect(twinAfter.collateral).toBe(0n);
  expect(twinAfter.debt).toBe(0n);
  expect((await deficit()) - deficitBefore).toBeGreaterThan(0n);
}

describe("protection from collateral: one atomic deleverage, bounded on chain, judged by Aave", () => {
  it("at a health factor of 1.02 with no idle USDC: a flash-funded deleverage to the park target, recorded free; liquidationCall finds nothing; the unprotected twin is liquidated", async () => {
    const { operator, safe } = await borrowerSafe();
    const tenant = await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await operator.ownershipProof(gw.url, "managed"),
    });
    const api = authed(gw.url, tenant.key);
    const module = await operator.deployModule(automation.address, 2500);
    const safe_proof = await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 });
    expect((await api.post("/api/v1/delegation", { module, safe_proof }, null)).status).toBe(200);
    await operator.approveDelegation(module);
    // what the service publishes is what the module enforces: its slippage bound, signed by the Safe at attachment
    const published = (await api.get("/api/v1/policy-state")).body.protection_authority;
    expect(BigInt(published.max_swap_slippage_bps)).toBe(
      await client().readContract({ address: module, abi: PROTECTION_MODULE_ABI, functionName: "maxSlippageBps" }),
    );
    expect(published.repayment_source).toBe("user collateral");
    expect((await api.get("/fees.json")).body.protection_costs).toMatchObject({ service_fee_pct: 0, max_swap_slippage_bps: published.max_swap_slippage_bps });
    const twin = await borrowerSafe(); // the same position, unprotected
    try {
      await protectAndJudge(tenant, api, safe, twin.safe);
    } finally {
      await moveMarket(fork, "WETH", 3_000);
    }
  }, 120_000);

  it("a pool that pays above the oracle (the feed fell, nobody traded the pool yet): the sale is sized so the repayment stops at the park target", async () => {
    const { operator, safe } = await borrowerSafe();
    const tenant = await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await operator.ownershipProof(gw.url, "managed"),
    });
    const module = await operator.deployModule(automation.address, 2500);
    const safe_proof = await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 });
    const api = authed(gw.url, tenant.key);
    expect((await api.post("/api/v1/delegation", { module, safe_proof }, null)).status).toBe(200);
    await operator.approveDelegation(module);
    // the feed at 2,300 and the pool still at 3,000: a sale sized at the oracle would repay about 30% more than
    // planned and cross the park target (the module refuses that); the engine sizes it on the pool's quote
    await fork.setPrice("WETH", 2_300);
    const [result] = (await engine.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
    expect(result!.outcome, result!.detail).toBe("executed");
    const after = await account(safe);
    expect(after.ltvBps).toBeGreaterThanOrEqual(2500n);
    expect(after.ltvBps).toBeLessThan(2700n);
    await fork.setPrice("WETH", 3_000);
  }, 120_000);

  it("an upgrade to a new module is the owners' Safe transaction: the module in force keeps protecting until they execute it, then the new one does", async () => {
    const { operator, safe } = await borrowerSafe();
    const tenant = await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await operator.ownershipProof(gw.url, "managed"),
    });
    const api = authed(gw.url, tenant.key);
    const attach = async (module: `0x${string}`) =>
      api.post(
        "/api/v1/delegation",
        {
          module,
          safe_proof: await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 }),
        },
        null,
      );
    const first = getAddress(await operator.deployModule(automation.address, 2500));
    expect((await attach(first)).status).toBe(200);
    await operator.approveDelegation(first);

    // a new module, signed for by the Safe: staged, the first stays in force
    const second = getAddress(await operator.deployModule(automation.address, 2500));
    const staged = await attach(second);
    expect(staged.status).toBe(200);
    expect(staged.body).toMatchObject({
      state: "active",
      module: first,
      pending_upgrade: { module: second, enable_with: "GET /api/v1/delegation/safe-transaction?change=upgrade" },
    });
    try {
      await moveMarket(fork, "WETH", 2_300);
      const [acted] = (await engine.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
      expect(acted!.outcome, acted!.detail).toBe("executed");
      const hash = (await api.get("/api/v1/delegation")).body.protection_actions.at(-1).tx_hashes[0];
      expect((await client().getTransactionReceipt({ hash })).to).toBe(first.toLowerCase());
      await moveMarket(fork, "WETH", 3_000);

      // the owners' one Safe transaction: enableModule(second), disableModule(first); checked by the operator before it signs
      const prepared = (await api.get("/api/v1/delegation/safe-transaction?change=upgrade")).body;
      expect(prepared).toMatchObject({ change: "upgrade", module: second, replaces: first, safe_tx: { operation: 1 } });
      await expect(operator.executeUpgrade(prepared, first)).rejects.toThrow(/does not enable/);
      await operator.executeUpgrade(prepared, second);
      expect(await operator.moduleEnabled(second)).toBe(true);
      expect(await operator.moduleEnabled(first)).toBe(false);
      const upgraded = (await api.get("/api/v1/delegation")).body;
      expect(upgraded).toMatchObject({ state: "active", module: second, pending_upgrade: null });
      expect((await api.get("/api/v1/delegation/safe-transaction?change=upgrade")).body.error).toBe("invalid_transition");

      // the next fall is met through the new module; the old one can no longer act
      // the price at which the position's health factor is 1.2 (under the 1.3 trigger)
      const now = await account(safe);
      await moveMarket(fork, "WETH", Math.floor((3_000 * 1.2) / (Number(now.hf) / 1e18)));
      const [again] = (await engine.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
      expect(again!.outcome, again!.detail).toBe("executed");
      const next = (await api.get("/api/v1/delegation")).body.protection_actions.at(-1).tx_hashes[0];
      expect((await client().getTransactionReceipt({ hash: next })).to).toBe(second.toLowerCase());
    } finally {
      await moveMarket(fork, "WETH", 3_000);
    }
  }, 120_000);
});
