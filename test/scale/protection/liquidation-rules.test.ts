/**
 * Aave 3.6's liquidation rules as the liquidator computes them (bench/protection/liquidation-rules.ts): the close
 * factor, the collateral cap and the dust rule on chosen figures, then on the fork against Aave itself: the amount
 * the function gives, from what the liquidator reads on the chain, is what a liquidationCall repays, and asking
 * for 1 more repays no more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_LIQUIDATION_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { rpc } from "../../../fixtures/anvil";
import { FORK_RISK, startBaseFork, type BaseForkNode } from "../../../fixtures/base-fork";
import { forkClient, type ForkClient } from "../../../bench/protection/fork-client";
import { liquidationInputs } from "../../../bench/protection/liquidator";
import { largestDebtToCover, leavesNoDust, liquidationOf, maxLiquidatableDebt, type LiquidationInputs } from "../../../bench/protection/liquidation-rules";
import { borrower } from "../../../bench/protection/safes";
import { TEST_STORE } from "../../helpers/store";

const E8 = 10n ** 8n;
const WAD = 10n ** 18n;
/** 10 WETH at `ethUsd` against `debtUsd` USDC, WETH's threshold 83% */
const position = (ethUsd: bigint, debtUsd: bigint, over: Partial<LiquidationInputs> = {}): LiquidationInputs => ({
  totalDebtBase: debtUsd * E8,
  healthFactor: (10n * ethUsd * 8300n * WAD) / (debtUsd * 10_000n),
  reserveDebt: debtUsd * 10n ** 6n,
  collateralBalance: 10n * WAD,
  debtPrice: E8,
  debtUnit: 10n ** 6n,
  collateralPrice: ethUsd * E8,
  collateralUnit: WAD,
  bonusBps: 10500n,
  protocolFeeBps: 1000n,
  ...over,
});

describe("3.6's liquidation rules, pure", () => {
  it("half the debt above HF 0.95, all of it at or under 0.95 or under 2,000 USD", () => {
    expect(maxLiquidatableDebt(position(2350n, 20_000n))).toBe(10_000n * 10n ** 6n);
    expect(maxLiquidatableDebt(position(2000n, 20_000n))).toBe(20_000n * 10n ** 6n);
    expect(maxLiquidatableDebt(position(180n, 1_500n))).toBe(1_500n * 10n ** 6n);
  });
  it("the bonus's collateral caps the debt: all 10 WETH at 2,000 USD pay 20,000 / 1.05 USDC", () => {
    const p = position(2000n, 20_000n);
    expect(largestDebtToCover(p)).toBe((20_000n * 10n ** 6n * 10_000n + 10_499n) / 10_500n);
    const all = liquidationOf(p, p.reserveDebt);
    expect(all.collateral + all.fee).toBe(p.collateralBalance);
  });
  it("a call that would leave under 1,000 USD of collateral is refused; the largest one leaving 1,000 is accepted", () => {
    // 1 WETH at 2,100 USD against 2,030 USDC, at a health factor of 0.96 (a threshold of 92.8%)
    const p = position(2100n, 2_030n, { collateralBalance: WAD, healthFactor: 96n * 10n ** 16n });
    // with the close factor at 50% (HF 0.96, both sides over 2,000 USD): half the debt leaves 1,015 USD of debt, 1,034.25 of collateral
    expect(maxLiquidatableDebt(p)).toBe(1_015n * 10n ** 6n);
    expect(largestDebtToCover(p)).toBe(1_015n * 10n ** 6n);
    // a collateral of 2,050 USD: half the debt would leave 984.25 USD of it, so the largest amount leaves 1,000
    const q = { ...p, collateralPrice: 2_050n * E8 };
    const largest = largestDebtToCover(q);
    expect(leavesNoDust(q, largest)).toBe(true);
    expect(leavesNoDust(q, largest + 1n)).toBe(false);
    expect(largest).toBeLessThan(maxLiquidatableDebt(q));
  });
  it("nothing to liquidate at HF 1 or above", () => {
    expect(largestDebtToCover(position(3000n, 20_000n))).toBe(0n);
  });
});

const m = AAVE_MARKETS.base;

describe.skipIf(TEST_STORE === "postgres")("3.6's liquidation rules against Aave on the fork", () => {
  let fork: BaseForkNode;
  let liquidator: ForkClient;
  beforeAll(async () => {
    fork = await startBaseFork();
    liquidator = forkClient(fork.rpcUrl);
    await fork.fund(liquidator.account.address, 1_000_000n * 10n ** 6n);
    const hash = await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] });
    await liquidator.waitForTransactionReceipt({ hash });
  }, 60_000);
  afterAll(async () => fork?.stop());

  /** the USDC a liquidationCall asking `amount` repays, in a block at `timestamp` (the state restored after) */
  async function repaidBy(who: `0x${string}`, amount: bigint, timestamp: bigint): Promise<bigint> {
    const snapshot = await rpc(fork.rpcUrl, "evm_snapshot");
    try {
      const held = () => liquidator.readContract({ address: m.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: [liquidator.account.address] });
      const before = await held();
      await rpc(fork.rpcUrl, "evm_setNextBlockTimestamp", [Number(timestamp)]);
      const hash = await liquidator.writeContract({
        address: m.pool,
        abi: AAVE_LIQUIDATION_ABI,
        functionName: "liquidationCall",
        args: [m.weth, m.usdc, who, amount, false],
        gas: 2_000_000n,
      });
      expect((await liquidator.waitForTransactionReceipt({ hash })).status).toBe("success");
      return before - (await held());
    } finally {
      await rpc(fork.rpcUrl, "evm_revert", [snapshot]);
    }
  }

  // the ETH price (whole USD) at which 10 WETH against 20,000 USDC stand at health `hf`
  const priceAt = (hf: number) => Math.round((hf * 20_000 * 10_000) / (10 * FORK_RISK.WETH.liquidationThresholdBps));

  for (const [label, hf] of [
    ["above 0.95: half the debt", 0.97],
    ["under 0.95: the collateral caps it", 0.85],
  ] as const) {
    it(`${label}; the function's amount is what Aave repays, 1 more repays no more`, async () => {
      const { safe } = await borrower(fork, 20_000n * 10n ** 6n);
      await fork.setPrice("WETH", priceAt(hf));
      // the inputs at the latest block; the liquidations run in a block of the same timestamp (no interest between)
      const { timestamp } = await liquidator.getBlock({ blockTag: "latest" });
      const inputs = await liquidationInputs(liquidator, m.weth, safe);
      expect(inputs.healthFactor).toBeLessThan(WAD);
      const largest = largestDebtToCover(inputs);
      expect(largest).toBeGreaterThan(0n);
      expect(await repaidBy(safe, largest, timestamp)).toBe(largest);
      expect(await repaidBy(safe, largest + 1n, timestamp)).toBe(largest);
      if (hf > 0.95) expect(largest).toBe(maxLiquidatableDebt(inputs));
      else {
        const all = liquidationOf(inputs, inputs.reserveDebt);
        expect([all.debt, all.collateral + all.fee]).toEqual([largest, inputs.collateralBalance]);
      }
      await fork.setPrice("WETH", 3000);
    }, 120_000);
  }
});
