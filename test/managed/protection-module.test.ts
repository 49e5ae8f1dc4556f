/**
 * The on-wallet policy (ProtectionModule, built with Forge) on a Safe 1.4.1 at
 * the canonical addresses on the Base fork: every allowed and every denied call.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { BaseError, ContractFunctionRevertedError, createWalletClient, encodeFunctionData, http, publicActions, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { Operator, PROTECTION_MODULE_ABI } from "../../signer-agent/src/operator";

let fork: BaseForkNode;
let operator: Operator;
let safe: `0x${string}`;
let module: `0x${string}`;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const USDC = AaveV3Base.ASSETS.USDC.UNDERLYING;
const WETH = AaveV3Base.ASSETS.WETH.UNDERLYING;
const POOL = AaveV3Base.POOL;

const service = () => createWalletClient({ account: automation, chain: base, transport: http(fork.rpcUrl), pollingInterval: 50 }).extend(publicActions);

const setEth = (address: `0x${string}`) => fork.fund(address);

/** the module's custom error name when the automation key's call reverts, or "ok" */
async function tryExecute(to: `0x${string}`, data: Hex, from = automation): Promise<string> {
  const client = createWalletClient({ account: from, chain: base, transport: http(fork.rpcUrl), pollingInterval: 50 }).extend(publicActions);
  try {
    const { request } = await client.simulateContract({ address: module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [to, data] });
    // an explicit gas limit, as the protection engine sends: an estimate taken in the block where the reserve was
    // last updated omits Aave's interest-index update, which the next block's execution then runs out of gas on
    const hash = await client.writeContract({ ...request, gas: 1_000_000n });
    const receipt = await client.waitForTransactionReceipt({ hash });
    return receipt.status === "success" ? "ok" : "reverted";
  } catch (err) {
    const revert = err instanceof BaseError ? (err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null) : null;
    return revert?.data?.errorName ?? revert?.reason ?? "reverted";
  }
}

const repay = (amount: bigint, onBehalfOf: `0x${string}` = safe) =>
  encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [USDC, amount, 2n, onBehalfOf] });
const approveUsdc = (spender: `0x${string}`, amount: bigint) => encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [spender, amount] });

beforeAll(async () => {
  fork = await startBaseFork();
  await setEth(automation.address);
}, 60_000);

/**
 * Each test's own Safe: $30,000 of WETH, 15,000 USDC borrowed (LTV 50%), its ProtectionModule deployed
 * (enabled when asked). Tests do not depend on each other's state, in any order.
 */
async function freshSafe(enabled: boolean) {
  operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await setEth(operator.account.address);
  safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(10n * 10n ** 18n);
  await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
  module = await operator.deployModule(automation.address, 2500);
  if (enabled) await operator.approveDelegation(module);
}
afterAll(() => fork?.stop());

describe("ProtectionModule", () => {
  it("denies everything while delegation is not approved", async () => {
    await freshSafe(false);
    expect(await operator.moduleEnabled(module)).toBe(false);
    expect(await tryExecute(USDC, approveUsdc(POOL, 1n))).toBe("NotEnabled");
  });

  it("once enabled, lets only the automation key act", async () => {
    await freshSafe(true);
    expect(await operator.moduleEnabled(module)).toBe(true);
    const stranger = privateKeyToAccount(generatePrivateKey());
    await setEth(stranger.address);
    expect(await tryExecute(USDC, approveUsdc(POOL, 1n), stranger)).toBe("NotAutomation");
  });

  it("refuses every call outside its scope", async () => {
    await freshSafe(true);
    const other = "0x000000000000000000000000000000000000dEaD";
    expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [USDC, 1n, 2n, 0, safe] }))).toBe("CallNotAllowed");
    expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [USDC, 1n, safe, 0] }))).toBe("CallNotAllowed");
    expect(await tryExecute(USDC, encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [other, 1n] }))).toBe("CallNotAllowed");
    expect(await tryExecute(USDC, approveUsdc(other, 1n))).toBe("CallNotAllowed");
    expect(await tryExecute(other, approveUsdc(POOL, 1n))).toBe("CallNotAllowed");
    expect(await tryExecute(POOL, repay(1n, other))).toBe("NotForThisSafe");
    expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [WETH, 1n, other] }))).toBe("NotForThisSafe");
    expect(
      await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [AaveV3Base.ASSETS.GHO.UNDERLYING, 1n, 2n, safe] })),
    ).toBe("TokenNotListed");
    // withdrawing collateral would raise LTV
    expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [WETH, 10n ** 18n, safe] }))).toBe("LtvIncreased");
  });

  it("allows the approval to the Pool and a repayment that lowers LTV toward the park target, not past it", async () => {
    await freshSafe(true);
    expect(await tryExecute(USDC, approveUsdc(POOL, 15_000n * 10n ** 6n))).toBe("ok");
    // repaying everything would take LTV to 0, below the 25% park target
    expect(await tryExecute(POOL, repay(15_000n * 10n ** 6n))).toBe("OvershotParkTarget");
    // 15,000 - 25% x 30,000 = 7,500 brings LTV to exactly 25%
    expect(await tryExecute(POOL, repay(7_500n * 10n ** 6n))).toBe("ok");
    const ltv = await service().readContract({ address: module, abi: PROTECTION_MODULE_ABI, functionName: "ltvBps" });
    expect(ltv).toBe(2500n);
    // at the park target, a further repayment overshoots
    expect(await tryExecute(POOL, repay(1_000_000n))).toBe("OvershotParkTarget");
  });

  it("allows repayWithATokens (collateral repays debt) and a withdrawal that does not raise LTV", async () => {
    // a second Safe: USDC supplied as collateral, USDC borrowed against it
    const op2 = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
    await setEth(op2.account.address);
    const safe2 = await op2.createSafe("2");
    await fork.fund(safe2, 20_000n * 10n ** 6n);
    await op2.execSafe([
      { to: USDC, data: approveUsdc(POOL, 20_000n * 10n ** 6n) },
      { to: POOL, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [USDC, 20_000n * 10n ** 6n, safe2, 0] }) },
    ]);
    const module2 = await op2.deployModule(automation.address, 2500);
    await op2.approveDelegation(module2);
    const previous = module;
    module = module2;
    try {
      // no debt: withdrawing to the Safe keeps LTV at 0
      expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [USDC, 1_000n * 10n ** 6n, safe2] }))).toBe("ok");
      await op2.execSafe([
        { to: POOL, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [USDC, 10_000n * 10n ** 6n, 2n, 0, safe2] }) },
      ]);
      // 19,000 collateral, 10,000 debt (52.6%): repaying X with aTokens gives (10,000 - X) / (19,000 - X) = 25% at X = 7,000
      expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [USDC, 7_000n * 10n ** 6n, 2n] }))).toBe(
        "ok",
      );
      const ltv = await service().readContract({ address: module2, abi: PROTECTION_MODULE_ABI, functionName: "ltvBps" });
      expect(ltv).toBe(2500n);
      // at the park target a further repayment with aTokens would end below it (repayWithATokens only ever repays the Safe's own debt):
      // 100 USDC more gives 2,900 / 11,900 = 24.4%. (One atomic unit would not move LTV's basis points at all once a block's
      // interest has accrued, and is refused as LtvDidNotDecrease instead.)
      expect(await tryExecute(POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [USDC, 100n * 10n ** 6n, 2n] }))).toBe(
        "OvershotParkTarget",
      );
    } finally {
      module = previous;
    }
  });

  it("revocation stops future actions, while one already submitted may still settle", async () => {
    await freshSafe(true);
    // the Safe parked at 25% (7,500 of debt), then the price falls: LTV rises above the target again
    expect(await tryExecute(USDC, approveUsdc(POOL, 15_000n * 10n ** 6n))).toBe("ok");
    expect(await tryExecute(POOL, repay(7_500n * 10n ** 6n))).toBe("ok");
    await fork.setPrice("WETH", 2_000); // $20,000 collateral, 7,500 debt: 37.5%
    const client = service();
    try {
      // automine off: the service's repayment is submitted, then the operator revokes, then a block is mined
      await client.request({ method: "evm_setAutomine" as never, params: [false] as never });
      const submitted = await client.writeContract({
        address: module,
        abi: PROTECTION_MODULE_ABI,
        functionName: "execute",
        args: [POOL, repay(2_000n * 10n ** 6n)],
        gas: 1_000_000n,
      });
      const revokeHash = await operator.revokeDelegation(module);
      await client.request({ method: "evm_mine" as never, params: [] as never });
      await client.request({ method: "evm_setAutomine" as never, params: [true] as never });
      expect((await client.waitForTransactionReceipt({ hash: submitted })).status).toBe("success");
      expect((await client.waitForTransactionReceipt({ hash: revokeHash })).status).toBe("success");
      expect(await operator.moduleEnabled(module)).toBe(false);
      expect(await tryExecute(POOL, repay(1_000n * 10n ** 6n))).toBe("NotEnabled");
    } finally {
      await client.request({ method: "evm_setAutomine" as never, params: [true] as never });
      await fork.setPrice("WETH", 3_000);
    }
  });
});
