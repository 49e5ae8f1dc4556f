/**
 * The signer's policy on decoded calldata: every allow-list, every refusal,
 * the caps to the micro-USDC, and each action's exact shape. Envelopes come
 * from the gateway's own planner (what a real gateway sends).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeFunctionData, encodeFunctionData, getAddress, maxUint256, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../test/helpers/refusal";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "@treasury/core/contracts/uniswap";
import { planSteps } from "@treasury/core/chain/envelope-plan";
import { formatDecimal, parseUsdc } from "@treasury/core/domain/money";
import type { ActionParams } from "@treasury/core/domain/sandbox-ledger";
import {
  checkIntent,
  checkStep,
  DEFAULT_MAX_FEE_BPS,
  defaultPolicy,
  loadPolicy,
  maxFeeFor,
  PolicySchema,
  policyMicro,
  type Policy,
  type StepTx,
} from "./policy";
import { feeOf } from "@treasury/core/actions";
import { withQuotes } from "@treasury/core/actions/exit-plan";
import type { ExitSnapshot } from "@treasury/core/actions/exit-sizing";
import type { SignerIntent } from "@treasury/core/actions/signer-rule";
import { ALL } from "@treasury/core/actions/steps";

const m = AAVE_MARKETS.base;
const FEE = getAddress("0x000000000000000000000000000000000000fEe5");
const self = getAddress("0x1111111111111111111111111111111111111111");
const other = getAddress("0x2222222222222222222222222222222222222222");
const policy = defaultPolicy([FEE]);
const tx = (to: `0x${string}`, data: Hex, over: Partial<StepTx> = {}): StepTx => ({ chain_id: 8453, to, data, value: "0", ...over });
const pool = (fn: string, args: readonly unknown[]) => tx(m.pool, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: fn as never, args: args as never }));
const erc20 = (token: `0x${string}`, fn: "approve" | "transfer", args: readonly unknown[]) =>
  tx(token, encodeFunctionData({ abi: ERC20_ABI, functionName: fn, args: args as never }));
const swap = (p: Record<string, unknown>) =>
  tx(
    swapRouter02(8453),
    encodeFunctionData({
      abi: SWAP_ROUTER_02_ABI,
      functionName: "exactInputSingle",
      args: [{ tokenIn: m.usdc, tokenOut: m.weth, fee: 500, recipient: self, amountIn: 1n, amountOutMinimum: 0n, sqrtPriceLimitX96: 0n, ...p }] as never,
    }),
  );

describe("checkStep: what one call does, from its calldata", () => {
  it("decodes each allowed call into its role, token, amount and the USDC it moves", () => {
    expect(checkStep(policy, pool("supply", [m.usdc, 5n, self, 0]), self)).toMatchObject({
      functionName: "supply",
      role: "supply",
      to: m.pool,
      token: m.usdc,
      amount: 5n,
      usdcMoved: 5n,
    });
    expect(checkStep(policy, pool("supply", [m.weth, 7n, self, 0]), self)).toMatchObject({ role: "supply", token: m.weth, amount: 7n, usdcMoved: 0n });
    expect(checkStep(policy, pool("borrow", [m.usdc, 9n, 2n, 0, self]), self)).toMatchObject({ role: "borrow", token: m.usdc, amount: 9n, usdcMoved: 9n });
    expect(checkStep(policy, pool("repay", [m.usdc, 3n, 2n, self]), self)).toMatchObject({ role: "repay", token: m.usdc, amount: 3n, usdcMoved: 3n });
    expect(checkStep(policy, pool("repay", [m.weth, 3n, 2n, self]), self)).toMatchObject({ role: "repay", usdcMoved: 0n });
    expect(checkStep(policy, erc20(m.usdc, "approve", [m.pool, 11n]), self)).toMatchObject({
      role: "approve",
      token: m.usdc,
      amount: 11n,
      counterparty: m.pool,
      usdcMoved: 0n,
    });
    expect(checkStep(policy, erc20(m.usdc, "transfer", [FEE, 2n]), self)).toMatchObject({
      role: "fee",
      token: m.usdc,
      amount: 2n,
      counterparty: FEE,
      usdcMoved: 2n,
    });
    expect(checkStep(policy, swap({ amountIn: 4n }), self)).toMatchObject({ role: "swap", token: m.usdc, amount: 4n, counterparty: m.weth, usdcMoved: 4n });
    expect(checkStep(policy, swap({ tokenIn: m.weth, tokenOut: m.usdc, amountIn: 4n }), self)).toMatchObject({ role: "swap", usdcMoved: 0n });
  });

  it("refuses what is outside the allow-lists", () => {
    expect(refusalOf(() => checkStep(policy, { ...pool("supply", [m.usdc, 1n, self, 0]), chain_id: 1 }, self))).toBe("chain 1 is not allowed");
    expect(refusalOf(() => checkStep(policy, tx(other, "0x"), self))).toBe(`target ${other} is not allowed`);
    expect(refusalOf(() => checkStep(policy, { ...pool("supply", [m.usdc, 1n, self, 0]), value: "1" }, self))).toBe("value 1 is not allowed (only 0)");
    expect(refusalOf(() => checkStep(policy, tx(m.pool, "0xdeadbeef"), self))).toBe("calldata 0xdeadbeef is not a known function");
    const noTransfers: Policy = { ...policy, allowed_functions: policy.allowed_functions.filter((f) => f !== "transfer") };
    expect(refusalOf(() => checkStep(noTransfers, erc20(m.usdc, "transfer", [FEE, 1n]), self))).toBe("function transfer is not allowed");
  });

  it("refuses calls on another's behalf, to another recipient, or of other assets", () => {
    expect(refusalOf(() => checkStep(policy, pool("supply", [m.usdc, 1n, other, 0]), self))).toBe(`supply on behalf of ${other}, not this wallet`);
    expect(refusalOf(() => checkStep(policy, pool("supply", [other, 1n, self, 0]), self))).toBe(`asset ${other} is not allowed`);
    expect(refusalOf(() => checkStep(policy, pool("borrow", [m.usdc, 1n, 2n, 0, other]), self))).toBe(`borrow on behalf of ${other}, not this wallet`);
    expect(refusalOf(() => checkStep(policy, pool("borrow", [m.weth, 1n, 2n, 0, self]), self))).toBe("only USDC may be borrowed");
    expect(refusalOf(() => checkStep(policy, pool("repay", [m.usdc, 1n, 2n, other]), self))).toBe(`repay on behalf of ${other}, not this wallet`);
    expect(refusalOf(() => checkStep(policy, erc20(m.usdc, "approve", [other, 1n]), self))).toBe(`approval to ${other} is not allowed`);
    expect(refusalOf(() => checkStep(policy, erc20(m.usdc, "transfer", [other, 1n]), self))).toBe(`transfer to ${other} is not allowed`);
    expect(refusalOf(() => checkStep(policy, erc20(m.weth, "transfer", [FEE, 1n]), self))).toBe("only USDC may be transferred (the service fee)");
    expect(refusalOf(() => checkStep(policy, swap({ recipient: other }), self))).toBe(`swap proceeds go to ${other}, not this wallet`);
    expect(refusalOf(() => checkStep(policy, swap({ tokenOut: other }), self))).toBe("swap tokens are not allowed");
    expect(refusalOf(() => checkStep(policy, swap({ tokenIn: other }), self))).toBe("swap tokens are not allowed");
  });

  it("the per-transaction cap counts what moves, exactly, whatever the call", () => {
    const capped: Policy = { ...policy, per_transaction_cap_usdc: 100 };
    expect(checkStep(capped, erc20(m.usdc, "transfer", [FEE, 100_000_000n]), self).usdcMoved).toBe(100_000_000n);
    expect(refusalOf(() => checkStep(capped, erc20(m.usdc, "transfer", [FEE, 100_000_001n]), self))).toBe(
      "100.000001 USDC is above the per-transaction cap of 100",
    );
    expect(refusalOf(() => checkStep(capped, pool("supply", [m.usdc, 100_000_001n, self, 0]), self))).toMatch(/per-transaction cap/);
    expect(refusalOf(() => checkStep(capped, pool("borrow", [m.usdc, 100_000_001n, 2n, 0, self]), self))).toMatch(/per-transaction cap/);
    expect(refusalOf(() => checkStep(capped, swap({ amountIn: 100_000_001n }), self))).toMatch(/per-transaction cap/);
    // approvals move nothing: no cap
    expect(checkStep(capped, erc20(m.usdc, "approve", [m.pool, 10n ** 12n]), self).usdcMoved).toBe(0n);
  });
});

/** a planned envelope for `self`, as the gateway sends it */
const envelope = (action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth", feeMicro?: bigint) => {
  const amountMicro = parseUsdc(usdc);
  const steps = planSteps({
    action,
    chain: "base",
    wallet: self,
    amountMicro,
    feeMicro: feeMicro ?? feeOf(action, amountMicro).feeMicro,
    feeRecipient: FEE,
    target,
  });
  return { action, steps: steps.map((s) => ({ unsigned_transaction: tx(s.to, s.data) })) };
};
const intent = (action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth") => ({ action, amountMicro: parseUsdc(usdc), target });
/** the signer's own floor for each swap: here the envelope's bound itself (the floor's refusals: test/security/signer-policy.test.ts) */
const floorsOf = (e: { steps: { unsigned_transaction: StepTx }[] }) =>
  e.steps.flatMap(({ unsigned_transaction: t }) => {
    try {
      const d = decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: t.data });
      const p = d.args[0] as { tokenIn: `0x${string}`; tokenOut: `0x${string}`; amountIn: bigint; amountOutMinimum: bigint };
      return d.functionName === "exactInputSingle"
        ? [{ token: getAddress(p.tokenIn), tokenOut: getAddress(p.tokenOut), amountIn: p.amountIn, floor: p.amountOutMinimum }]
        : [];
    } catch {
      return [];
    }
  });
const check = (i: ReturnType<typeof intent>, e: { action: string; steps: { unsigned_transaction: StepTx }[] }, who: `0x${string}`, p: Policy) =>
  checkIntent({ swapFloors: floorsOf(e), ...i }, e, who, p);
const withSteps = (e: ReturnType<typeof envelope>, steps: StepTx[]) => ({ ...e, steps: steps.map((unsigned_transaction) => ({ unsigned_transaction })) });

describe("checkIntent: the envelope is exactly the asked-for action", () => {
  it("accepts the planned envelopes, with and without a fee", () => {
    expect(check(intent("deposit", 500), envelope("deposit", 500), self, policy).map((c) => c.role)).toEqual(["fee", "approve", "supply"]);
    expect(check(intent("deposit", 500), envelope("deposit", 500, undefined, 0n), self, policy)).toHaveLength(2);
    expect(check(intent("borrow", 1000), envelope("borrow", 1000), self, policy).map((c) => c.role)).toEqual(["borrow", "fee"]);
    expect(check(intent("borrow", 1000), envelope("borrow", 1000, undefined, 0n), self, policy)).toHaveLength(1);
    expect(check(intent("repay", 50), envelope("repay", 50), self, policy).map((c) => c.role)).toEqual(["approve", "repay"]);
    expect(check(intent("convert", 3000, "eth"), envelope("convert", 3000, "eth"), self, policy).map((c) => c.role)).toEqual([
      "fee",
      "approve",
      "swap",
      "approve",
      "supply",
    ]);
    expect(check(intent("convert", 3000, "btc"), envelope("convert", 3000, "btc"), self, policy)).toHaveLength(5);
    expect(check(intent("convert", 3000, "btc"), envelope("convert", 3000, "btc", 0n), self, policy)).toHaveLength(4);
  });

  it("refuses another action, mixed chains and unknown markets", () => {
    expect(refusalOf(() => check(intent("deposit", 500), { ...envelope("deposit", 500), action: "borrow" }, self, policy))).toBe(
      "asked for deposit, the envelope is a borrow",
    );
    const e = envelope("repay", 50);
    const arb: Policy = { ...policy };
    expect(
      refusalOf(() =>
        check(intent("repay", 50), withSteps(e, [e.steps[0]!.unsigned_transaction, { ...e.steps[1]!.unsigned_transaction, chain_id: 42161 }]), self, arb),
      ),
    ).toBe("the envelope's steps are on different chains");
    expect(refusalOf(() => check(intent("repay", 50), withSteps(e, []), self, policy))).toBe("the envelope has no steps");
    const optimism: Policy = { ...policy, allowed_chains: [...policy.allowed_chains, 10] };
    expect(
      refusalOf(() =>
        check(
          intent("repay", 50),
          withSteps(
            e,
            e.steps.map((s) => ({ ...s.unsigned_transaction, chain_id: 10 })),
          ),
          self,
          optimism,
        ),
      ),
    ).toBe("the envelope is on no known Aave market");
  });

  it("the fee: at most the published rate (rounded as the gateway rounds), one, none on a repayment", () => {
    expect(maxFeeFor(500_000_000n, 200n)).toBe(10_000_000n);
    expect(maxFeeFor(25n, 200n)).toBe(1n);
    expect(maxFeeFor(24n, 200n)).toBe(0n);
    expect(DEFAULT_MAX_FEE_BPS).toBe(200);
    const d = envelope("deposit", 500);
    const [fee, approve, supply] = d.steps.map((s) => s.unsigned_transaction);
    const feeOf = (micro: bigint) => erc20(m.usdc, "transfer", [FEE, micro]);
    const supplyOf = (micro: bigint) => pool("supply", [m.usdc, micro, self, 0]);
    const approveOf = (micro: bigint) => erc20(m.usdc, "approve", [m.pool, micro]);
    // 2% + 1 micro, with the supply lowered so the total still adds up
    expect(
      refusalOf(() => check(intent("deposit", 500), withSteps(d, [feeOf(10_000_001n), approveOf(489_999_999n), supplyOf(489_999_999n)]), self, policy)),
    ).toBe("the fee of 10.000001 USDC is above the 2% rate on 500 (at most 10)");
    const lower: Policy = { ...policy, max_fee_bps: 100 };
    expect(refusalOf(() => check(intent("deposit", 500), d, self, lower))).toBe("the fee of 10 USDC is above the 1% rate on 500 (at most 5)");
    expect(refusalOf(() => check(intent("deposit", 500), withSteps(d, [fee!, feeOf(0n), approve!, supply!]), self, policy))).toBe(
      "the envelope pays 2 fees; at most one is allowed",
    );
    const r = envelope("repay", 50);
    expect(refusalOf(() => check(intent("repay", 50), withSteps(r, [...r.steps.map((s) => s.unsigned_transaction), feeOf(1n)]), self, policy))).toBe(
      "a repay is free (a downward leg); the envelope pays a fee",
    );
  });

  it("deposit: the supply and the fee add up to the amount; the approval equals the supply", () => {
    const d = envelope("deposit", 500);
    const [fee] = d.steps.map((s) => s.unsigned_transaction);
    const supplyOf = (micro: bigint) => pool("supply", [m.usdc, micro, self, 0]);
    const approveOf = (micro: bigint) => erc20(m.usdc, "approve", [m.pool, micro]);
    expect(refusalOf(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_001n), supplyOf(490_000_001n)]), self, policy))).toBe(
      "the deposit moves 500.000001 USDC (supply 490.000001 + fee 10), not the 500 asked for",
    );
    expect(refusalOf(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_001n), supplyOf(490_000_000n)]), self, policy))).toBe(
      "the approval does not equal the supply",
    );
    expect(refusalOf(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_000n)]), self, policy))).toBe(
      "the deposit needs exactly one USDC supply to the Pool; the envelope has 0",
    );
    expect(refusalOf(() => check(intent("deposit", 500), withSteps(d, [fee!, supplyOf(490_000_000n)]), self, policy))).toBe(
      "the deposit needs exactly one USDC approval to the Pool; the envelope has 0",
    );
    // an extra call of a role the action does not use
    expect(
      refusalOf(() =>
        check(intent("deposit", 500), withSteps(d, [...d.steps.map((s) => s.unsigned_transaction), pool("repay", [m.usdc, 1n, 2n, self])]), self, policy),
      ),
    ).toBe("the deposit needs 3 calls; the envelope has 4");
  });

  it("borrow and repay: the amount is the intent's", () => {
    const b = envelope("borrow", 1000);
    expect(refusalOf(() => check(intent("borrow", 999), withSteps(b, [pool("borrow", [m.usdc, 1_000_000_000n, 2n, 0, self])]), self, policy))).toBe(
      "the borrow takes 1000 USDC, not 999",
    );
    expect(refusalOf(() => check(intent("borrow", 1000), withSteps(b, [erc20(m.usdc, "transfer", [FEE, 1n])]), self, policy))).toBe(
      "the borrow needs exactly one USDC borrow from the Pool; the envelope has 0",
    );
    const r = envelope("repay", 50);
    const approveOf = (micro: bigint) => erc20(m.usdc, "approve", [m.pool, micro]);
    expect(
      refusalOf(() => check(intent("repay", 50), withSteps(r, [approveOf(50_000_000n), pool("repay", [m.usdc, 60_000_000n, 2n, self])]), self, policy)),
    ).toBe("the repayment moves 60 USDC, not 50");
    expect(
      refusalOf(() => check(intent("repay", 50), withSteps(r, [approveOf(60_000_000n), pool("repay", [m.usdc, 50_000_000n, 2n, self])]), self, policy)),
    ).toBe("the approval does not equal the repayment");
    expect(
      refusalOf(() =>
        check(intent("repay", 50), withSteps(r, [approveOf(50_000_000n), pool("repay", [m.usdc, 50_000_000n, 2n, self]), approveOf(1n)]), self, policy),
      ),
    ).toMatch(/exactly one USDC approval/);
  });

  it("convert: the swap buys the asked-for asset with the net amount; the supply is what the swap guarantees", () => {
    const c = envelope("convert", 3000, "eth");
    const steps = c.steps.map((s) => s.unsigned_transaction);
    expect(refusalOf(() => check(intent("convert", 3000, "btc"), c, self, policy))).toBe("the convert needs exactly one USDC to btc swap; the envelope has 0");
    const swapCall = checkStep(policy, steps[2]!, self);
    const minOut = (swapCall.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
    const supplyMore = pool("supply", [m.weth, minOut + 1n, self, 0]);
    const approveMore = erc20(m.weth, "approve", [m.pool, minOut + 1n]);
    expect(refusalOf(() => check(intent("convert", 3000, "eth"), withSteps(c, [steps[0]!, steps[1]!, steps[2]!, approveMore, supplyMore]), self, policy))).toBe(
      "the supply of the bought asset does not match the swap's guaranteed output",
    );
    expect(
      refusalOf(() =>
        check(
          intent("convert", 3000, "eth"),
          withSteps(c, [steps[0]!, erc20(m.usdc, "approve", [swapRouter02(8453), 1n]), steps[2]!, steps[3]!, steps[4]!]),
          self,
          policy,
        ),
      ),
    ).toBe("the USDC approval does not equal the swap");
    expect(refusalOf(() => check(intent("convert", 2999, "eth"), c, self, policy))).toMatch(/the conversion moves 3000 USDC, not 2999|above the 2% rate/);
  });
});

describe("checkIntent: each call is the right token to the right contract", () => {
  const arbPool = AAVE_MARKETS.arbitrum.pool;
  const arbRouter = swapRouter02(42161);
  /** the planned envelope with step `i` replaced */
  const swapStep = (e: ReturnType<typeof envelope>, i: number, t: StepTx) =>
    withSteps(
      e,
      e.steps.map((s, j) => (j === i ? t : s.unsigned_transaction)),
    );
  const onArbPool = (t: StepTx) => ({ ...t, to: arbPool });

  it("deposit", () => {
    const d = envelope("deposit", 500);
    const [, approve, supply] = d.steps.map((s) => s.unsigned_transaction);
    const cases: [StepTx, number, RegExp][] = [
      [pool("supply", [m.weth, 490_000_000n, self, 0]), 2, /exactly one USDC supply to the Pool/],
      [onArbPool(supply!), 2, /not to the market's Pool/],
      [erc20(m.usdc, "approve", [swapRouter02(8453), 490_000_000n]), 1, /exactly one USDC approval to the Pool/],
      [erc20(m.weth, "approve", [m.pool, 490_000_000n]), 1, /exactly one USDC approval to the Pool/],
    ];
    for (const [t, i, why] of cases) expect(refusalOf(() => check(intent("deposit", 500), swapStep(d, i, t), self, policy))).toMatch(why);
    expect(approve).toBeDefined();
  });

  it("borrow and repay", () => {
    const b = envelope("borrow", 1000);
    expect(refusalOf(() => check(intent("borrow", 1000), swapStep(b, 0, onArbPool(b.steps[0]!.unsigned_transaction)), self, policy))).toMatch(
      /not to the market's Pool/,
    );
    const r = envelope("repay", 50);
    const cases: [StepTx, number, RegExp][] = [
      [pool("repay", [m.weth, 50_000_000n, 2n, self]), 1, /exactly one USDC repayment to the Pool/],
      [onArbPool(r.steps[1]!.unsigned_transaction), 1, /not to the market's Pool/],
      [erc20(m.usdc, "approve", [swapRouter02(8453), 50_000_000n]), 0, /exactly one USDC approval to the Pool/],
      [erc20(m.weth, "approve", [m.pool, 50_000_000n]), 0, /exactly one USDC approval to the Pool/],
    ];
    for (const [t, i, why] of cases) expect(refusalOf(() => check(intent("repay", 50), swapStep(r, i, t), self, policy))).toMatch(why);
  });

  it("convert", () => {
    const c = envelope("convert", 3000, "eth");
    const steps = c.steps.map((s) => s.unsigned_transaction);
    const swapCall = checkStep(policy, steps[2]!, self);
    const net = swapCall.amount;
    const minOut = (swapCall.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
    const cases: [StepTx, number, RegExp][] = [
      [{ ...steps[2]!, to: arbRouter }, 2, /not to the market's router/],
      [swap({ amountIn: net, amountOutMinimum: minOut, tokenIn: m.btc }), 2, /exactly one USDC to eth swap/],
      [erc20(m.weth, "approve", [swapRouter02(8453), net]), 1, /exactly one USDC approval to the router/],
      [erc20(m.usdc, "approve", [m.pool, net]), 1, /exactly one USDC approval to the router/],
      [pool("supply", [m.btc, minOut, self, 0]), 4, /exactly one supply of the bought asset/],
      [onArbPool(steps[4]!), 4, /not to the market's Pool/],
      [erc20(m.weth, "approve", [swapRouter02(8453), minOut]), 3, /exactly one approval of the bought asset to the Pool/],
      [erc20(m.btc, "approve", [m.pool, minOut]), 3, /exactly one approval of the bought asset to the Pool/],
    ];
    for (const [t, i, why] of cases) expect(refusalOf(() => check(intent("convert", 3000, "eth"), swapStep(c, i, t), self, policy))).toMatch(why);
    // the swap moves one micro more than the intent allows (approval matched): refused on the total
    const more = withSteps(c, [
      steps[0]!,
      erc20(m.usdc, "approve", [swapRouter02(8453), net + 1n]),
      swap({ amountIn: net + 1n, amountOutMinimum: minOut }),
      steps[3]!,
      steps[4]!,
    ]);
    expect(refusalOf(() => check(intent("convert", 3000, "eth"), more, self, policy))).toBe(`the conversion moves 3000.000001 USDC, not 3000`);
    // supplying less than the guaranteed output is fine; its approval must match it
    const less = withSteps(c, [
      steps[0]!,
      steps[1]!,
      steps[2]!,
      erc20(m.weth, "approve", [m.pool, minOut - 1n]),
      pool("supply", [m.weth, minOut - 1n, self, 0]),
    ]);
    expect(check(intent("convert", 3000, "eth"), less, self, policy)).toHaveLength(5);
    const mismatched = withSteps(c, [
      steps[0]!,
      steps[1]!,
      steps[2]!,
      erc20(m.weth, "approve", [m.pool, minOut]),
      pool("supply", [m.weth, minOut - 1n, self, 0]),
    ]);
    expect(refusalOf(() => check(intent("convert", 3000, "eth"), mismatched, self, policy))).toBe(
      "the supply of the bought asset does not match the swap's guaranteed output",
    );
  });

  it("a known function outside the roles is refused even when the policy allows it", () => {
    const allowing: Policy = { ...policy, allowed_functions: [...policy.allowed_functions, "getReserveData"] };
    expect(refusalOf(() => checkStep(allowing, pool("getReserveData", [m.usdc]), self))).toBe("function getReserveData is not allowed");
    expect(refusalOf(() => checkStep(policy, pool("getReserveData", [m.usdc]), self))).toBe("function getReserveData is not allowed");
    // a withdrawal goes to this wallet only
    expect(checkStep(policy, pool("withdraw", [m.usdc, 1n, self]), self)).toMatchObject({ role: "withdraw", amount: 1n, usdcMoved: 0n });
    expect(refusalOf(() => checkStep(policy, pool("withdraw", [m.usdc, 1n, "0x000000000000000000000000000000000000dEaD"]), self))).toBe(
      "withdrawal to 0x000000000000000000000000000000000000dEaD, not this wallet",
    );
    expect(refusalOf(() => checkStep(policy, tx(m.pool, "0x12345678aabbccdd"), self))).toBe("calldata 0x12345678 is not a known function");
  });
});

describe("checkStep: repayments of all of the debt, from the supplied USDC, and the assets a withdrawal may take", () => {
  const capped: Policy = { ...policy, per_transaction_cap_usdc: 100 };

  it("repayWithATokens: USDC only, the wallet's own supplied USDC, moves nothing out of the wallet", () => {
    expect(checkStep(policy, pool("repayWithATokens", [m.usdc, ALL, 2n]), self)).toEqual({
      functionName: "repayWithATokens",
      role: "repay",
      args: [getAddress(m.usdc), ALL, 2n],
      to: getAddress(m.pool),
      token: getAddress(m.usdc),
      amount: ALL,
      usdcMoved: 0n,
    });
    // bounded, far above the cap: still nothing moved out of the wallet
    expect(checkStep(capped, pool("repayWithATokens", [m.usdc, 500_000_000n, 2n]), self)).toMatchObject({ role: "repay", amount: 500_000_000n, usdcMoved: 0n });
    expect(refusalOf(() => checkStep(policy, pool("repayWithATokens", [m.weth, ALL, 2n]), self))).toBe("only USDC debt is repaid with aTokens");
    expect(refusalOf(() => checkStep(policy, pool("repayWithATokens", [m.btc, 1n, 2n]), self))).toBe("only USDC debt is repaid with aTokens");
    // the USDC of another market is USDC all the same here; where it is sent is checkIntent's (the market's Pool)
    expect(checkStep(policy, pool("repayWithATokens", [AAVE_MARKETS.arbitrum.usdc, 1n, 2n]), self)).toMatchObject({
      token: getAddress(AAVE_MARKETS.arbitrum.usdc),
      usdcMoved: 0n,
    });
  });

  it("a max repay moves nothing against the cap (its approval bounds it); a bounded one counts its amount, to the micro-USDC", () => {
    expect(checkStep(capped, pool("repay", [m.usdc, ALL, 2n, self]), self)).toMatchObject({
      functionName: "repay",
      role: "repay",
      token: getAddress(m.usdc),
      amount: ALL,
      usdcMoved: 0n,
    });
    expect(checkStep(capped, pool("repay", [m.usdc, 100_000_000n, 2n, self]), self).usdcMoved).toBe(100_000_000n);
    expect(refusalOf(() => checkStep(capped, pool("repay", [m.usdc, 100_000_001n, 2n, self]), self))).toBe(
      "100.000001 USDC is above the per-transaction cap of 100",
    );
    expect(refusalOf(() => checkStep(capped, pool("repay", [m.usdc, ALL - 1n, 2n, self]), self))).toMatch(
      /^115792089237316195423570985008687907853269984665640564039457584007913129\.639934 USDC is above the per-transaction cap of 100$/,
    );
    // not USDC: nothing counted, bounded or not
    expect(checkStep(capped, pool("repay", [m.weth, 100_000_001n, 2n, self]), self).usdcMoved).toBe(0n);
    // all of the debt, for another wallet: refused all the same
    expect(refusalOf(() => checkStep(capped, pool("repay", [m.usdc, ALL, 2n, other]), self))).toBe(`repay on behalf of ${other}, not this wallet`);
  });

  it("a withdrawal takes only an asset of the allow-list, to this wallet, whatever the amount (nothing leaves the wallet)", () => {
    expect(checkStep(capped, pool("withdraw", [m.usdc, ALL, self]), self)).toEqual({
      functionName: "withdraw",
      role: "withdraw",
      args: [getAddress(m.usdc), ALL, self],
      to: getAddress(m.pool),
      token: getAddress(m.usdc),
      amount: ALL,
      usdcMoved: 0n,
    });
    expect(checkStep(capped, pool("withdraw", [m.usdc, 500_000_000n, self]), self)).toMatchObject({
      token: getAddress(m.usdc),
      amount: 500_000_000n,
      usdcMoved: 0n,
    });
    expect(checkStep(policy, pool("withdraw", [m.btc, 7n, self]), self)).toMatchObject({ token: getAddress(m.btc), amount: 7n });
    expect(refusalOf(() => checkStep(policy, pool("withdraw", [other, 1n, self]), self))).toBe(`asset ${other} is not allowed`);
    const noBtc: Policy = {
      ...policy,
      allowed_targets: Object.fromEntries(Object.entries(policy.allowed_targets).filter(([a]) => getAddress(a) !== getAddress(m.btc))),
    };
    expect(refusalOf(() => checkStep(noBtc, pool("withdraw", [m.btc, 7n, self]), self))).toBe(`asset ${getAddress(m.btc)} is not allowed`);
    expect(checkStep(noBtc, pool("withdraw", [m.weth, 7n, self]), self)).toMatchObject({ token: getAddress(m.weth) });
    // the allow-list is read whatever the case of its addresses
    const lower: Policy = { ...policy, allowed_targets: Object.fromEntries(Object.entries(policy.allowed_targets).map(([a, n]) => [a.toLowerCase(), n])) };
    expect(checkStep(lower, pool("withdraw", [m.btc, 7n, self]), self)).toMatchObject({ token: getAddress(m.btc) });
  });
});

/** a downward leg as the gateway plans it for `self` on Base: free, the action's own parameters */
const downEnvelope = (action: "withdraw" | "sell" | "exit", params: ActionParams) => {
  const steps = planSteps({ action, chain: "base", wallet: self, amountMicro: 0n, feeMicro: feeOf(action, 0n).feeMicro, feeRecipient: FEE, params });
  return { action: action as string, steps: steps.map((s) => ({ unsigned_transaction: tx(s.to, s.data) })) };
};
type Envelope = ReturnType<typeof downEnvelope>;
const txsOf = (e: Envelope) => e.steps.map((s) => s.unsigned_transaction);
const stepsOf = (e: Envelope, steps: StepTx[]): Envelope => ({ ...e, steps: steps.map((unsigned_transaction) => ({ unsigned_transaction })) });
/** the envelope with step `i` replaced, or sent to another contract */
const replaced = (e: Envelope, i: number, t: StepTx) =>
  stepsOf(
    e,
    txsOf(e).map((s, j) => (j === i ? t : s)),
  );
const sentTo = (e: Envelope, i: number, to: `0x${string}`) => replaced(e, i, { ...txsOf(e)[i]!, to });
/** what the agent asks for a downward leg: no USDC amount (valued by the service), the asset and units, the signer's floors */
const downIntent = (action: "withdraw" | "sell" | "exit", e: Envelope, over: Partial<SignerIntent> = {}) => ({
  action,
  amountMicro: 0n,
  swapFloors: floorsOf(e),
  ...over,
});
const noBtc: Policy = {
  ...policy,
  allowed_targets: Object.fromEntries(Object.entries(policy.allowed_targets).filter(([a]) => getAddress(a) !== getAddress(m.btc))),
};
const POOL = getAddress(m.pool);
const ROUTER = getAddress(swapRouter02(8453));
const USDC = getAddress(m.usdc);
const WETH = getAddress(m.weth);
const BTC = getAddress(m.btc);
const ETH = 10n ** 18n;

describe("checkIntent: withdraw", () => {
  const withdrawal = (asset: "USDC" | "ETH" | "BTC", units: bigint) => downEnvelope("withdraw", { asset, units: units.toString() });
  const asked = (e: Envelope, asset: "USDC" | "ETH" | "BTC", units?: bigint) => downIntent("withdraw", e, { asset, units });

  it("USDC, ETH and BTC: one withdrawal of the units asked for, from the Pool, to this wallet", () => {
    for (const [asset, token, units] of [
      ["USDC", USDC, 250_000_000n],
      ["ETH", WETH, ETH / 2n],
      ["BTC", BTC, 1_500_000n],
    ] as const) {
      const e = withdrawal(asset, units);
      expect(e.steps).toHaveLength(1);
      const calls = checkIntent(asked(e, asset, units), e, self, policy);
      expect(calls).toEqual([{ functionName: "withdraw", role: "withdraw", args: [token, units, self], to: POOL, token, amount: units, usdcMoved: 0n }]);
    }
    // what comes back to the wallet is not held to the caps: 20,000 USDC under a cap of 100
    const big = withdrawal("USDC", 20_000_000_000n);
    expect(checkIntent(asked(big, "USDC", 20_000_000_000n), big, self, { ...policy, per_transaction_cap_usdc: 100 })).toHaveLength(1);
    // USDC by default
    const usdc = withdrawal("USDC", 1n);
    expect(checkIntent(downIntent("withdraw", usdc, { units: 1n }), usdc, self, policy)).toHaveLength(1);
  });

  it("other units, another asset, no units asked, a fee or any other call is refused", () => {
    const e = withdrawal("USDC", 250_000_000n);
    expect(refusalOf(() => checkIntent(asked(e, "USDC", 249_999_999n), e, self, policy))).toBe(
      "the withdrawal takes 250000000 units of USDC, not the 249999999 asked for",
    );
    expect(refusalOf(() => checkIntent(asked(e, "USDC"), e, self, policy))).toBe("the withdrawal takes 250000000 units of USDC, not the ? asked for");
    expect(refusalOf(() => checkIntent(asked(e, "ETH", 250_000_000n), e, self, policy))).toBe(
      "the withdraw needs exactly one ETH withdrawal from the Pool; the envelope has 0",
    );
    const eth = withdrawal("ETH", ETH);
    expect(refusalOf(() => checkIntent(asked(eth, "BTC", ETH), eth, self, policy))).toBe(
      "the withdraw needs exactly one BTC withdrawal from the Pool; the envelope has 0",
    );
    expect(refusalOf(() => checkIntent(asked(eth, "USDC", ETH), eth, self, policy))).toBe(
      "the withdraw needs exactly one USDC withdrawal from the Pool; the envelope has 0",
    );
    expect(refusalOf(() => checkIntent(asked(e, "USDC", 250_000_000n), stepsOf(e, [...txsOf(e), erc20(m.usdc, "transfer", [FEE, 1n])]), self, policy))).toBe(
      "a withdraw is free (a downward leg); the envelope pays a fee",
    );
    expect(refusalOf(() => checkIntent(asked(e, "USDC", 250_000_000n), stepsOf(e, [...txsOf(e), ...txsOf(e)]), self, policy))).toBe(
      "the withdraw needs exactly one USDC withdrawal from the Pool; the envelope has 2",
    );
    expect(refusalOf(() => checkIntent(asked(e, "USDC", 250_000_000n), stepsOf(e, [erc20(m.usdc, "approve", [m.pool, 1n]), ...txsOf(e)]), self, policy))).toBe(
      "the withdraw needs 1 calls; the envelope has 2",
    );
  });

  it("attacks: sent to WETH (whose fallback takes anything) or to another market's Pool, to another wallet, of an asset off the allow-list", () => {
    const e = withdrawal("ETH", ETH);
    const i = asked(e, "ETH", ETH);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 0, WETH), self, policy))).toBe(`a withdraw sent to ${WETH}, not to the market's Pool ${POOL}`);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 0, USDC), self, policy))).toBe(`a withdraw sent to ${USDC}, not to the market's Pool ${POOL}`);
    const arbPool = getAddress(AAVE_MARKETS.arbitrum.pool);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 0, arbPool), self, policy))).toBe(`a withdraw sent to ${arbPool}, not to the market's Pool ${POOL}`);
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("withdraw", [m.weth, ETH, other])), self, policy))).toBe(
      `withdrawal to ${other}, not this wallet`,
    );
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("withdraw", [other, ETH, self])), self, policy))).toBe(`asset ${other} is not allowed`);
    const btc = withdrawal("BTC", 1_500_000n);
    expect(refusalOf(() => checkIntent(asked(btc, "BTC", 1_500_000n), btc, self, noBtc))).toBe(`asset ${BTC} is not allowed`);
    expect(checkIntent(i, e, self, noBtc)).toHaveLength(1);
  });
});

describe("checkIntent: sell", () => {
  const sale = (asset: "ETH" | "BTC", units: bigint, quoted: bigint) => downEnvelope("sell", { asset, units: units.toString(), quoted: quoted.toString() });
  const asked = (e: Envelope, asset: "ETH" | "BTC", units: bigint, over: Partial<SignerIntent> = {}) => downIntent("sell", e, { asset, units, ...over });
  /** the signer's own floor, written out: its quote less its maximum slippage */
  const floor = (token: `0x${string}`, amountIn: bigint, micro: bigint) => [{ token, tokenOut: USDC, amountIn, floor: micro }];

  it("ETH and BTC: the withdrawal, its approval to the router and the swap for USDC, at or above the signer's floor", () => {
    // 0.5 ETH quoted at 1,500 USDC: bounded at 1% under it, 1,485 USDC
    const e = sale("ETH", ETH / 2n, 1_500_000_000n);
    const calls = checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: floor(WETH, ETH / 2n, 1_485_000_000n) }), e, self, policy);
    expect(calls.map((c) => [c.role, c.to, c.token, c.amount, c.counterparty, c.usdcMoved])).toEqual([
      ["withdraw", POOL, WETH, ETH / 2n, undefined, 0n],
      ["approve", WETH, WETH, ETH / 2n, ROUTER, 0n],
      ["swap", ROUTER, WETH, ETH / 2n, USDC, 0n],
    ]);
    expect((calls[2]!.args[0] as { amountOutMinimum: bigint; recipient: string }).amountOutMinimum).toBe(1_485_000_000n);
    // a floor under the bound is fine too
    expect(checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: floor(WETH, ETH / 2n, 1_400_000_000n) }), e, self, policy)).toHaveLength(3);
    const b = sale("BTC", 2_000_000n, 1_200_000_000n);
    expect(
      checkIntent(asked(b, "BTC", 2_000_000n, { swapFloors: floor(BTC, 2_000_000n, 1_188_000_000n) }), b, self, policy).map((c) => [c.role, c.token]),
    ).toEqual([
      ["withdraw", BTC],
      ["approve", BTC],
      ["swap", BTC],
    ]);
  });

  it("a swap bounded under the signer's floor, or one it has no floor for, is refused", () => {
    const e = sale("ETH", ETH / 2n, 1_500_000_000n);
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: floor(WETH, ETH / 2n, 1_485_000_001n) }), e, self, policy))).toBe(
      "the sell's swap accepts as little as 1485 USDC, under the 1485.000001 USDC the policy's maximum slippage allows",
    );
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: floor(WETH, ETH, 1_000_000n) }), e, self, policy))).toBe(
      "no quote of its own for the sell's swap: not signed",
    );
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: floor(BTC, ETH / 2n, 1_000_000n) }), e, self, policy))).toBe(
      "no quote of its own for the sell's swap: not signed",
    );
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n, { swapFloors: [] }), e, self, policy))).toBe(
      "no quote of its own for the sell's swap: not signed",
    );
  });

  it("other units, another asset, a swap of other units or for another token, a fee: refused", () => {
    const e = sale("ETH", ETH / 2n, 1_500_000_000n);
    const [w, a, s] = txsOf(e);
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH), e, self, policy))).toBe(`the sale withdraws ${ETH / 2n} units, not the ${ETH} asked for`);
    expect(refusalOf(() => checkIntent(downIntent("sell", e, { asset: "ETH" }), e, self, policy))).toBe(
      `the sale withdraws ${ETH / 2n} units, not the ? asked for`,
    );
    expect(refusalOf(() => checkIntent(asked(e, "BTC", ETH / 2n), e, self, policy))).toBe(
      "the sell needs exactly one BTC withdrawal from the Pool; the envelope has 0",
    );
    const more = swap({ tokenIn: m.weth, tokenOut: m.usdc, amountIn: ETH, amountOutMinimum: 1_485_000_000n });
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n), replaced(e, 2, more), self, policy))).toBe(
      "the approval and the swap must move exactly the units withdrawn",
    );
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n), replaced(e, 1, erc20(m.weth, "approve", [swapRouter02(8453), ETH])), self, policy))).toBe(
      "the approval and the swap must move exactly the units withdrawn",
    );
    const forBtc = swap({ tokenIn: m.weth, tokenOut: m.btc, amountIn: ETH / 2n, amountOutMinimum: 1n });
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n), replaced(e, 2, forBtc), self, policy))).toBe(
      "the sell needs exactly one ETH to USDC swap; the envelope has 0",
    );
    expect(refusalOf(() => checkIntent(asked(e, "ETH", ETH / 2n), stepsOf(e, [w!, a!, s!, erc20(m.usdc, "transfer", [FEE, 1n])]), self, policy))).toBe(
      "a sell is free (a downward leg); the envelope pays a fee",
    );
  });

  it("attacks: the swap sent to the Pool, the approval on the Pool or on another market's token, proceeds elsewhere, an asset off the allow-list", () => {
    const e = sale("ETH", ETH / 2n, 1_500_000_000n);
    const i = asked(e, "ETH", ETH / 2n);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 2, POOL), self, policy))).toBe(`a exactInputSingle sent to ${POOL}, not to the market's router ${ROUTER}`);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 2, WETH), self, policy))).toBe(`a exactInputSingle sent to ${WETH}, not to the market's router ${ROUTER}`);
    // an approval is a call on a token: sent to the Pool (an allowed target) it is refused
    expect(refusalOf(() => checkIntent(i, sentTo(e, 1, POOL), self, policy))).toBe(`a approve on ${POOL}, not on a token of the market`);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 1, ROUTER), self, policy))).toBe(`a approve on ${ROUTER}, not on a token of the market`);
    const arbWeth = getAddress(AAVE_MARKETS.arbitrum.weth);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 1, arbWeth), self, policy))).toBe(`a approve on ${arbWeth}, not on a token of the market`);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 0, WETH), self, policy))).toBe(`a withdraw sent to ${WETH}, not to the market's Pool ${POOL}`);
    expect(
      refusalOf(() =>
        checkIntent(
          i,
          replaced(e, 2, swap({ tokenIn: m.weth, tokenOut: m.usdc, amountIn: ETH / 2n, amountOutMinimum: 1_485_000_000n, recipient: other })),
          self,
          policy,
        ),
      ),
    ).toBe(`swap proceeds go to ${other}, not this wallet`);
    expect(refusalOf(() => checkIntent(i, replaced(e, 2, swap({ tokenIn: other, tokenOut: m.usdc, amountIn: ETH / 2n })), self, policy))).toBe(
      "swap tokens are not allowed",
    );
    const b = sale("BTC", 2_000_000n, 1_200_000_000n);
    expect(refusalOf(() => checkIntent(asked(b, "BTC", 2_000_000n), b, self, noBtc))).toBe(`asset ${BTC} is not allowed`);
  });
});

describe("repay: all of the debt (type(uint256).max) where an amount was asked", () => {
  it("is refused by the repay's rule, though a max repay moves nothing against the cap", () => {
    const r = envelope("repay", 50);
    const [approve] = r.steps.map((s) => s.unsigned_transaction);
    const all = withSteps(r, [approve!, pool("repay", [m.usdc, ALL, 2n, self])]);
    const tiny: Policy = { ...policy, per_transaction_cap_usdc: 1 };
    expect(checkStep(tiny, all.steps[1]!.unsigned_transaction, self)).toMatchObject({ amount: ALL, usdcMoved: 0n });
    expect(refusalOf(() => check(intent("repay", 50), all, self, tiny))).toBe(`the repayment moves ${formatDecimal(maxUint256, 6)} USDC, not 50`);
    expect(
      refusalOf(() =>
        check(intent("repay", 50), withSteps(r, [erc20(m.usdc, "approve", [m.pool, ALL]), pool("repay", [m.usdc, 50_000_000n, 2n, self])]), self, policy),
      ),
    ).toBe("the approval does not equal the repayment");
    // the bounded repayment as planned counts against the cap
    expect(refusalOf(() => check(intent("repay", 50), r, self, { ...policy, per_transaction_cap_usdc: 49.999999 }))).toBe(
      "50 USDC is above the per-transaction cap of 49.999999",
    );
    expect(check(intent("repay", 50), r, self, { ...policy, per_transaction_cap_usdc: 50 })).toHaveLength(2);
  });
});

describe("checkIntent: exit, end to end", () => {
  const snap = (over: Partial<ExitSnapshot> = {}): ExitSnapshot => ({
    debt: 18_000_000_000n,
    walletUsdc: 0n,
    supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 0n },
    price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 60_000_000_000n },
    lt: { USDC: 7_800n, ETH: 8_250n, BTC: 7_800n },
    ...over,
  });
  /** the pool half a percent under the oracle */
  const quote = async (symbol: "ETH" | "BTC", units: bigint) => (symbol === "ETH" ? (units * 2_985_000_000n) / ETH : (units * 59_700_000_000n) / 10n ** 8n);
  const planned = async (s: ExitSnapshot, sell = false) => {
    const plan = await withQuotes(s, sell, quote);
    return { plan, e: downEnvelope("exit", { ...(sell ? { sell: true } : {}), exit: JSON.stringify(plan) }) };
  };
  /** what the signer reads of the wallet on its own RPC */
  const positionOf = (s: ExitSnapshot, over: { debt?: bigint; aUsdc?: bigint } = {}) => ({
    debt: over.debt ?? s.debt,
    supplied: { [USDC]: over.aUsdc ?? s.supplied.USDC, [WETH]: s.supplied.ETH, [BTC]: s.supplied.BTC } as Record<`0x${string}`, bigint>,
  });
  const asked = (e: Envelope, s: ExitSnapshot, over: Partial<SignerIntent> = {}) => downIntent("exit", e, { position: positionOf(s), ...over });
  const fnOf = (c: { functionName: string; amount: bigint; token: string }) =>
    `${c.functionName} ${c.token === USDC ? "USDC" : c.token === WETH ? "WETH" : c.token === BTC ? "BTC" : c.token} ${c.amount === ALL ? "max" : c.amount}`;

  it("from the supplied USDC: repayWithATokens max, when the supplied USDC the signer reads covers the debt and the interest until it runs", async () => {
    const s = snap({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } });
    const { plan, e } = await planned(s);
    expect(plan.repayWithATokens).toBe("max");
    const calls = checkIntent(asked(e, s), e, self, policy);
    expect(calls.map(fnOf)).toEqual(["repayWithATokens USDC max", "withdraw USDC max", "withdraw WETH max"]);
    expect(calls[0]).toMatchObject({ role: "repay", to: POOL, usdcMoved: 0n });
    // the buffer: 0.1% of the debt and a unit; at it, signed; a unit under it, refused
    const buffer = 18_000_000_000n / 1_000n + 1n;
    expect(checkIntent(asked(e, s, { position: positionOf(s, { aUsdc: 18_000_000_000n + buffer }) }), e, self, policy)).toHaveLength(3);
    const short = "the supplied USDC does not cover the debt: the exit's last repayment must be all of the debt from the wallet (repay type(uint256).max)";
    expect(refusalOf(() => checkIntent(asked(e, s, { position: positionOf(s, { aUsdc: 18_000_000_000n + buffer - 1n }) }), e, self, policy))).toBe(short);
    expect(refusalOf(() => checkIntent(asked(e, s, { position: { debt: s.debt, supplied: {} } }), e, self, policy))).toBe(short);
    // no position read at all: the debt is assumed, the supplied USDC is not
    expect(refusalOf(() => checkIntent(asked(e, s, { position: undefined }), e, self, policy))).toBe(short);
    // no debt read: nothing to cover
    expect(checkIntent(asked(e, s, { position: positionOf(s, { debt: 0n, aUsdc: 0n }) }), e, self, policy)).toHaveLength(3);
  });

  it("from the supplied USDC: attacks on the repayWithATokens (another asset, another contract) and on the withdrawals", async () => {
    const s = snap({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } });
    const { e } = await planned(s);
    const i = asked(e, s);
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("repayWithATokens", [m.weth, ALL, 2n])), self, policy))).toBe(
      "only USDC debt is repaid with aTokens",
    );
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("repayWithATokens", [m.btc, ALL, 2n])), self, policy))).toBe(
      "only USDC debt is repaid with aTokens",
    );
    // another market's USDC through this market's Pool: not the USDC of the debt
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("repayWithATokens", [AAVE_MARKETS.arbitrum.usdc, ALL, 2n])), self, policy))).toBe(
      "an exit repays USDC only",
    );
    expect(refusalOf(() => checkIntent(i, sentTo(e, 0, WETH), self, policy))).toBe(`a repayWithATokens sent to ${WETH}, not to the market's Pool ${POOL}`);
    expect(refusalOf(() => checkIntent(i, sentTo(e, 2, WETH), self, policy))).toBe(`a withdraw sent to ${WETH}, not to the market's Pool ${POOL}`);
    expect(refusalOf(() => checkIntent(i, replaced(e, 2, pool("withdraw", [other, ALL, self])), self, policy))).toBe(`asset ${other} is not allowed`);
    expect(refusalOf(() => checkIntent(i, replaced(e, 2, pool("withdraw", [m.weth, ALL, other])), self, policy))).toBe(
      `withdrawal to ${other}, not this wallet`,
    );
    // a bounded repayWithATokens does not close the debt
    expect(refusalOf(() => checkIntent(i, replaced(e, 0, pool("repayWithATokens", [m.usdc, 18_000_000_000n, 2n])), self, policy))).toBe(
      "the exit does not repay all of the debt (no type(uint256).max repayment)",
    );
  });

  it("from the wallet's USDC: its approval and the max repay pass a cap of 1 USDC (neither moves anything counted); an approval sent to the Pool is refused", async () => {
    const s = snap({ walletUsdc: 20_000_000_000n });
    const { plan, e } = await planned(s);
    const tiny: Policy = { ...policy, per_transaction_cap_usdc: 1 };
    const calls = checkIntent(asked(e, s), e, self, tiny);
    expect(calls.map(fnOf)).toEqual([`approve USDC ${plan.approval}`, "repay USDC max", "withdraw WETH max"]);
    expect(calls.map((c) => c.usdcMoved)).toEqual([0n, 0n, 0n]);
    expect(refusalOf(() => checkIntent(asked(e, s), sentTo(e, 0, POOL), self, policy))).toBe(`a approve on ${POOL}, not on a token of the market`);
    const arbUsdc = getAddress(AAVE_MARKETS.arbitrum.usdc);
    expect(refusalOf(() => checkIntent(asked(e, s), sentTo(e, 0, arbUsdc), self, policy))).toBe(`a approve on ${arbUsdc}, not on a token of the market`);
    expect(refusalOf(() => checkIntent(asked(e, s), sentTo(e, 1, USDC), self, policy))).toBe(`a repay sent to ${USDC}, not to the market's Pool ${POOL}`);
    // the last repayment bounded (the debt exactly): it counts against the cap, and it leaves the interest
    const bounded = replaced(e, 1, pool("repay", [m.usdc, 18_000_000_000n, 2n, self]));
    expect(refusalOf(() => checkIntent(asked(bounded, s), bounded, self, tiny))).toBe("18000 USDC is above the per-transaction cap of 1");
    expect(refusalOf(() => checkIntent(asked(bounded, s), bounded, self, { ...policy, per_transaction_cap_usdc: 18_000 }))).toBe(
      "the last repayment of an exit must be all of the debt (type(uint256).max)",
    );
    expect(refusalOf(() => checkIntent(asked(e, s), stepsOf(e, [...txsOf(e), erc20(m.usdc, "transfer", [FEE, 1n])]), self, policy))).toBe(
      "a exit is free (a downward leg); the envelope pays a fee",
    );
  });

  it("from collateral in rounds: each round's bounded repayment counts against the cap, the last (max) does not", async () => {
    const s = snap();
    const { plan, e } = await planned(s);
    const bounded = plan.rounds.map((r) => BigInt(r.repay)).filter((r) => r > 0n);
    expect(bounded.length).toBeGreaterThan(0);
    const calls = checkIntent(asked(e, s), e, self, policy);
    const repays = calls.filter((c) => c.role === "repay");
    expect(repays.map((c) => c.usdcMoved)).toEqual([...bounded, 0n]);
    expect(repays.at(-1)!.amount).toBe(ALL);
    // a cap at the largest bounded repayment passes; a micro-USDC under it, refused on it
    const largest = bounded.reduce((a, b) => (a > b ? a : b));
    expect(checkIntent(asked(e, s), e, self, { ...policy, per_transaction_cap_usdc: Number(formatDecimal(largest, 6)) })).toHaveLength(calls.length);
    const under = Number(formatDecimal(largest - 1n, 6));
    expect(refusalOf(() => checkIntent(asked(e, s), e, self, { ...policy, per_transaction_cap_usdc: under }))).toBe(
      `${formatDecimal(largest, 6)} USDC is above the per-transaction cap of ${under}`,
    );
    // a round's swap sent to the Pool, its withdrawal sent to WETH
    const firstSwap = calls.findIndex((c) => c.role === "swap");
    const firstWithdraw = calls.findIndex((c) => c.role === "withdraw");
    expect(refusalOf(() => checkIntent(asked(e, s), sentTo(e, firstSwap, POOL), self, policy))).toBe(
      `a exactInputSingle sent to ${POOL}, not to the market's router ${ROUTER}`,
    );
    expect(refusalOf(() => checkIntent(asked(e, s), sentTo(e, firstWithdraw, WETH), self, policy))).toBe(
      `a withdraw sent to ${WETH}, not to the market's Pool ${POOL}`,
    );
  });

  it("with a sale: the ETH and BTC withdrawn at the end are sold for USDC at or above the signer's floors; without a sale asked, refused", async () => {
    const s = snap({ walletUsdc: 20_000_000_000n, supplied: { USDC: 0n, ETH: 2n * ETH, BTC: 10_000_000n } });
    const { plan, e } = await planned(s, true);
    expect(plan.sales.map((x) => x.symbol)).toEqual(["ETH", "BTC"]);
    const calls = checkIntent(asked(e, s, { sell: true }), e, self, policy);
    expect(calls.map(fnOf)).toEqual([
      `approve USDC ${plan.approval}`,
      "repay USDC max",
      "withdraw WETH max",
      "withdraw BTC max",
      `approve WETH ${2n * ETH}`,
      `exactInputSingle WETH ${2n * ETH}`,
      "approve BTC 10000000",
      "exactInputSingle BTC 10000000",
    ]);
    expect(calls.filter((c) => c.role === "swap").map((c) => [c.counterparty, (c.args[0] as { amountOutMinimum: bigint }).amountOutMinimum])).toEqual(
      plan.sales.map((x) => [USDC, BigInt(x.minOut)]),
    );
    expect(refusalOf(() => checkIntent(asked(e, s), e, self, policy))).toBe("the exit sells collateral after its last repayment, and no sale was asked");
    // the signer's floor a unit above the ETH sale's bound
    const raised = floorsOf(e).map((f) => (f.token === WETH ? { ...f, floor: f.floor + 1n } : f));
    const ethMin = BigInt(plan.sales[0]!.minOut);
    expect(refusalOf(() => checkIntent(asked(e, s, { sell: true, swapFloors: raised }), e, self, policy))).toBe(
      `the exit's swap accepts as little as ${formatDecimal(ethMin, 6)} USDC, under the ${formatDecimal(ethMin + 1n, 6)} USDC the policy's maximum slippage allows`,
    );
    expect(refusalOf(() => checkIntent(asked(e, s, { sell: true, swapFloors: [] }), e, self, policy))).toBe(
      "no quote of its own for the exit's swap: not signed",
    );
    // a sale of an asset off the allow-list: its withdrawal is refused first
    expect(refusalOf(() => checkIntent(asked(e, s, { sell: true }), e, self, noBtc))).toBe(`asset ${BTC} is not allowed`);
    // the sale's swap sent to the Pool, its approval to the Pool's address
    expect(refusalOf(() => checkIntent(asked(e, s, { sell: true }), sentTo(e, 5, POOL), self, policy))).toBe(
      `a exactInputSingle sent to ${POOL}, not to the market's router ${ROUTER}`,
    );
    expect(refusalOf(() => checkIntent(asked(e, s, { sell: true }), sentTo(e, 4, POOL), self, policy))).toBe(
      `a approve on ${POOL}, not on a token of the market`,
    );
  });
});

describe("checkIntent: a fee on another market's USDC", () => {
  it("is refused: fees are paid on this market's USDC", () => {
    const d = envelope("deposit", 500);
    const arbUsdc = getAddress(AAVE_MARKETS.arbitrum.usdc);
    const onArb = withSteps(
      d,
      d.steps.map((s, i) => (i === 0 ? { ...s.unsigned_transaction, to: arbUsdc } : s.unsigned_transaction)),
    );
    expect(refusalOf(() => check(intent("deposit", 500), onArb, self, policy))).toBe(`a transfer on ${arbUsdc}, not on a token of the market`);
  });
});

describe("the policy file", () => {
  it("the default policy: Base and Arbitrum, their pools and tokens, the router, caps, the 2% fee", () => {
    expect(policy.allowed_chains).toEqual([8453, 42161]);
    expect(policy.allowed_functions).toEqual(["transfer", "approve", "supply", "exactInputSingle", "borrow", "repay", "withdraw", "repayWithATokens"]);
    expect(policy.allowed_targets[m.pool]).toBe("Aave V3 Pool (base)");
    expect(policy.allowed_targets[AAVE_MARKETS.arbitrum.usdc]).toBe("USDC (arbitrum)");
    expect(policy.allowed_targets[m.btc]).toBe("cbBTC (base)");
    expect(policy.allowed_targets[AAVE_MARKETS.arbitrum.btc]).toBe("WBTC (arbitrum)");
    expect(policy.approve_spenders).toEqual([m.pool, swapRouter02(8453), AAVE_MARKETS.arbitrum.pool, swapRouter02(42161)]);
    expect(policy.transfer_recipients).toEqual([FEE]);
    expect([policy.per_transaction_cap_usdc, policy.daily_cap_usdc, policy.x402_max_price_usdc, policy.x402_daily_budget_usdc, policy.max_fee_bps]).toEqual([
      10_000, 50_000, 0.1, 5, 200,
    ]);
    expect(policyMicro(0.1)).toBe(100_000n);
  });

  it("loads a valid file; refuses an invalid one with every reason, and inexact amounts", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "policy-"));
    const file = path.join(dir, "policy.json");
    fs.writeFileSync(file, JSON.stringify(policy));
    expect(loadPolicy(file)).toEqual(policy);
    fs.writeFileSync(file, JSON.stringify({ ...policy, allowed_chains: [], daily_cap_usdc: -1 }));
    expect(() => loadPolicy(file)).toThrow(/allowed_chains.*daily_cap_usdc|daily_cap_usdc.*allowed_chains/s);
    for (const k of ["per_transaction_cap_usdc", "daily_cap_usdc", "x402_max_price_usdc", "x402_daily_budget_usdc"]) {
      fs.writeFileSync(file, JSON.stringify({ ...policy, [k]: 1.0000001 }));
      expect(() => loadPolicy(file)).toThrow(`${k}: at most 6 decimals (exact micro-USDC)`);
    }
    fs.writeFileSync(file, JSON.stringify({ ...policy, max_fee_bps: 1001 }));
    expect(() => loadPolicy(file)).toThrow(/max_fee_bps/);
  });

  it("an invalid file's message: each issue as its dotted path and reason, in order, joined by semicolons", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "policy-"));
    const file = path.join(dir, "policy.json");
    fs.writeFileSync(file, JSON.stringify({ ...policy, allowed_chains: [], approve_spenders: [m.pool, "0xnope"], daily_cap_usdc: 1.0000001 }));
    let message = "";
    try {
      loadPolicy(file);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe(
      `invalid policy ${file}: allowed_chains: Too small: expected array to have >=1 items; approve_spenders.1: Invalid string: must match pattern /^0x[0-9a-fA-F]{40}$/; daily_cap_usdc: at most 6 decimals (exact micro-USDC)`,
    );
    // the exactness rule is the schema's own custom issue, on the amount's path
    const parsed = PolicySchema.safeParse({ ...policy, x402_max_price_usdc: 0.1000001 });
    expect(parsed.success ? [] : parsed.error.issues).toEqual([
      { code: "custom", path: ["x402_max_price_usdc"], message: "at most 6 decimals (exact micro-USDC)" },
    ]);
    // addresses in the file are read in any case and kept checksummed
    fs.writeFileSync(file, JSON.stringify({ ...policy, approve_spenders: [m.pool.toLowerCase()], transfer_recipients: [FEE.toLowerCase()] }));
    expect(loadPolicy(file)).toMatchObject({ approve_spenders: [getAddress(m.pool)], transfer_recipients: [FEE] });
  });
});
