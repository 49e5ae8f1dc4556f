/**
 * The signer's policy on decoded calldata: every allow-list, every refusal,
 * the caps to the micro-USDC, and each action's exact shape. Envelopes come
 * from the gateway's own planner (what a real gateway sends).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeFunctionData, encodeFunctionData, getAddress, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "../../contracts-abi/aave-pool";
import { AAVE_MARKETS } from "../../contracts-abi/chains";
import { ERC20_ABI } from "../../contracts-abi/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "../../contracts-abi/uniswap";
import { planSteps } from "../../gateway/src/chain/envelope-plan";
import { parseUsdc } from "../../gateway/src/domain/money";
import { checkIntent, checkStep, DEFAULT_MAX_FEE_BPS, defaultPolicy, loadPolicy, maxFeeFor, PolicyRefusal, policyMicro, type Policy, type StepTx } from "./policy";
import { feeOf } from "../../gateway/src/actions";

const m = AAVE_MARKETS.base;
const FEE = getAddress("0x000000000000000000000000000000000000fEe5");
const self = getAddress("0x1111111111111111111111111111111111111111");
const other = getAddress("0x2222222222222222222222222222222222222222");
const policy = defaultPolicy([FEE]);
const tx = (to: `0x${string}`, data: Hex, over: Partial<StepTx> = {}): StepTx => ({ chain_id: 8453, to, data, value: "0", ...over });
const pool = (fn: string, args: readonly unknown[]) => tx(m.pool, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: fn as never, args: args as never }));
const erc20 = (token: `0x${string}`, fn: "approve" | "transfer", args: readonly unknown[]) => tx(token, encodeFunctionData({ abi: ERC20_ABI, functionName: fn, args: args as never }));
const swap = (p: Record<string, unknown>) =>
  tx(swapRouter02(8453), encodeFunctionData({ abi: SWAP_ROUTER_02_ABI, functionName: "exactInputSingle", args: [{ tokenIn: m.usdc, tokenOut: m.weth, fee: 500, recipient: self, amountIn: 1n, amountOutMinimum: 0n, sqrtPriceLimitX96: 0n, ...p }] as never }));
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyRefusal);
    return (e as Error).message;
  }
  throw new Error("expected a refusal");
};

describe("checkStep: what one call does, from its calldata", () => {
  it("decodes each allowed call into its role, token, amount and the USDC it moves", () => {
    expect(checkStep(policy, pool("supply", [m.usdc, 5n, self, 0]), self)).toMatchObject({ functionName: "supply", role: "supply", to: m.pool, token: m.usdc, amount: 5n, usdcMoved: 5n });
    expect(checkStep(policy, pool("supply", [m.weth, 7n, self, 0]), self)).toMatchObject({ role: "supply", token: m.weth, amount: 7n, usdcMoved: 0n });
    expect(checkStep(policy, pool("borrow", [m.usdc, 9n, 2n, 0, self]), self)).toMatchObject({ role: "borrow", token: m.usdc, amount: 9n, usdcMoved: 9n });
    expect(checkStep(policy, pool("repay", [m.usdc, 3n, 2n, self]), self)).toMatchObject({ role: "repay", token: m.usdc, amount: 3n, usdcMoved: 3n });
    expect(checkStep(policy, pool("repay", [m.weth, 3n, 2n, self]), self)).toMatchObject({ role: "repay", usdcMoved: 0n });
    expect(checkStep(policy, erc20(m.usdc, "approve", [m.pool, 11n]), self)).toMatchObject({ role: "approve", token: m.usdc, amount: 11n, counterparty: m.pool, usdcMoved: 0n });
    expect(checkStep(policy, erc20(m.usdc, "transfer", [FEE, 2n]), self)).toMatchObject({ role: "fee", token: m.usdc, amount: 2n, counterparty: FEE, usdcMoved: 2n });
    expect(checkStep(policy, swap({ amountIn: 4n }), self)).toMatchObject({ role: "swap", token: m.usdc, amount: 4n, counterparty: m.weth, usdcMoved: 4n });
    expect(checkStep(policy, swap({ tokenIn: m.weth, tokenOut: m.usdc, amountIn: 4n }), self)).toMatchObject({ role: "swap", usdcMoved: 0n });
  });

  it("refuses what is outside the allow-lists", () => {
    expect(refusal(() => checkStep(policy, { ...pool("supply", [m.usdc, 1n, self, 0]), chain_id: 1 }, self))).toBe("chain 1 is not allowed");
    expect(refusal(() => checkStep(policy, tx(other, "0x"), self))).toBe(`target ${other} is not allowed`);
    expect(refusal(() => checkStep(policy, { ...pool("supply", [m.usdc, 1n, self, 0]), value: "1" }, self))).toBe("value 1 is not allowed (only 0)");
    expect(refusal(() => checkStep(policy, tx(m.pool, "0xdeadbeef"), self))).toBe("calldata 0xdeadbeef is not a known function");
    const noTransfers: Policy = { ...policy, allowed_functions: policy.allowed_functions.filter((f) => f !== "transfer") };
    expect(refusal(() => checkStep(noTransfers, erc20(m.usdc, "transfer", [FEE, 1n]), self))).toBe("function transfer is not allowed");
  });

  it("refuses calls on another's behalf, to another recipient, or of other assets", () => {
    expect(refusal(() => checkStep(policy, pool("supply", [m.usdc, 1n, other, 0]), self))).toBe(`supply on behalf of ${other}, not this wallet`);
    expect(refusal(() => checkStep(policy, pool("supply", [other, 1n, self, 0]), self))).toBe(`asset ${other} is not allowed`);
    expect(refusal(() => checkStep(policy, pool("borrow", [m.usdc, 1n, 2n, 0, other]), self))).toBe(`borrow on behalf of ${other}, not this wallet`);
    expect(refusal(() => checkStep(policy, pool("borrow", [m.weth, 1n, 2n, 0, self]), self))).toBe("only USDC may be borrowed");
    expect(refusal(() => checkStep(policy, pool("repay", [m.usdc, 1n, 2n, other]), self))).toBe(`repay on behalf of ${other}, not this wallet`);
    expect(refusal(() => checkStep(policy, erc20(m.usdc, "approve", [other, 1n]), self))).toBe(`approval to ${other} is not allowed`);
    expect(refusal(() => checkStep(policy, erc20(m.usdc, "transfer", [other, 1n]), self))).toBe(`transfer to ${other} is not allowed`);
    expect(refusal(() => checkStep(policy, erc20(m.weth, "transfer", [FEE, 1n]), self))).toBe("only USDC may be transferred (the service fee)");
    expect(refusal(() => checkStep(policy, swap({ recipient: other }), self))).toBe(`swap proceeds go to ${other}, not this wallet`);
    expect(refusal(() => checkStep(policy, swap({ tokenOut: other }), self))).toBe("swap tokens are not allowed");
    expect(refusal(() => checkStep(policy, swap({ tokenIn: other }), self))).toBe("swap tokens are not allowed");
  });

  it("the per-transaction cap counts what moves, exactly, whatever the call", () => {
    const capped: Policy = { ...policy, per_transaction_cap_usdc: 100 };
    expect(checkStep(capped, erc20(m.usdc, "transfer", [FEE, 100_000_000n]), self).usdcMoved).toBe(100_000_000n);
    expect(refusal(() => checkStep(capped, erc20(m.usdc, "transfer", [FEE, 100_000_001n]), self))).toBe("100.000001 USDC is above the per-transaction cap of 100");
    expect(refusal(() => checkStep(capped, pool("supply", [m.usdc, 100_000_001n, self, 0]), self))).toMatch(/per-transaction cap/);
    expect(refusal(() => checkStep(capped, pool("borrow", [m.usdc, 100_000_001n, 2n, 0, self]), self))).toMatch(/per-transaction cap/);
    expect(refusal(() => checkStep(capped, swap({ amountIn: 100_000_001n }), self))).toMatch(/per-transaction cap/);
    // approvals move nothing: no cap
    expect(checkStep(capped, erc20(m.usdc, "approve", [m.pool, 10n ** 12n]), self).usdcMoved).toBe(0n);
  });
});

/** a planned envelope for `self`, as the gateway sends it */
const envelope = (action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth", feeMicro?: bigint) => {
  const amountMicro = parseUsdc(usdc);
  const steps = planSteps({ action, chain: "base", wallet: self, amountMicro, feeMicro: feeMicro ?? feeOf(action, amountMicro).feeMicro, feeRecipient: FEE, target });
  return { action, steps: steps.map((s) => ({ unsigned_transaction: tx(s.to, s.data) })) };
};
const intent = (action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth") => ({ action, amountMicro: parseUsdc(usdc), target });
/** the signer's own floor for each swap: here the envelope's bound itself (the floor's refusals: test/security/signer-policy.test.ts) */
const floorsOf = (e: { steps: { unsigned_transaction: StepTx }[] }) =>
  e.steps.flatMap(({ unsigned_transaction: t }) => {
    try {
      const d = decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: t.data });
      const p = d.args[0] as { tokenIn: `0x${string}`; tokenOut: `0x${string}`; amountIn: bigint; amountOutMinimum: bigint };
      return d.functionName === "exactInputSingle" ? [{ token: getAddress(p.tokenIn), tokenOut: getAddress(p.tokenOut), amountIn: p.amountIn, floor: p.amountOutMinimum }] : [];
    } catch {
      return [];
    }
  });
const check = (i: ReturnType<typeof intent>, e: { action: string; steps: { unsigned_transaction: StepTx }[] }, who: `0x${string}`, p: Policy) => checkIntent({ swapFloors: floorsOf(e), ...i }, e, who, p);
const withSteps = (e: ReturnType<typeof envelope>, steps: StepTx[]) => ({ ...e, steps: steps.map((unsigned_transaction) => ({ unsigned_transaction })) });

describe("checkIntent: the envelope is exactly the asked-for action", () => {
  it("accepts the planned envelopes, with and without a fee", () => {
    expect(check(intent("deposit", 500), envelope("deposit", 500), self, policy).map((c) => c.role)).toEqual(["fee", "approve", "supply"]);
    expect(check(intent("deposit", 500), envelope("deposit", 500, undefined, 0n), self, policy)).toHaveLength(2);
    expect(check(intent("borrow", 1000), envelope("borrow", 1000), self, policy).map((c) => c.role)).toEqual(["borrow", "fee"]);
    expect(check(intent("borrow", 1000), envelope("borrow", 1000, undefined, 0n), self, policy)).toHaveLength(1);
    expect(check(intent("repay", 50), envelope("repay", 50), self, policy).map((c) => c.role)).toEqual(["approve", "repay"]);
    expect(check(intent("convert", 3000, "eth"), envelope("convert", 3000, "eth"), self, policy).map((c) => c.role)).toEqual(["fee", "approve", "swap", "approve", "supply"]);
    expect(check(intent("convert", 3000, "btc"), envelope("convert", 3000, "btc"), self, policy)).toHaveLength(5);
    expect(check(intent("convert", 3000, "btc"), envelope("convert", 3000, "btc", 0n), self, policy)).toHaveLength(4);
  });

  it("refuses another action, mixed chains and unknown markets", () => {
    expect(refusal(() => check(intent("deposit", 500), { ...envelope("deposit", 500), action: "borrow" }, self, policy))).toBe("asked for deposit, the envelope is a borrow");
    const e = envelope("repay", 50);
    const arb: Policy = { ...policy };
    expect(refusal(() => check(intent("repay", 50), withSteps(e, [e.steps[0]!.unsigned_transaction, { ...e.steps[1]!.unsigned_transaction, chain_id: 42161 }]), self, arb))).toBe("the envelope's steps are on different chains");
    expect(refusal(() => check(intent("repay", 50), withSteps(e, []), self, policy))).toBe("the envelope has no steps");
    const optimism: Policy = { ...policy, allowed_chains: [...policy.allowed_chains, 10] };
    expect(refusal(() => check(intent("repay", 50), withSteps(e, e.steps.map((s) => ({ ...s.unsigned_transaction, chain_id: 10 }))), self, optimism))).toBe("the envelope is on no known Aave market");
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
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [feeOf(10_000_001n), approveOf(489_999_999n), supplyOf(489_999_999n)]), self, policy))).toBe(
      "the fee of 10.000001 USDC is above the 2% rate on 500 (at most 10)",
    );
    const lower: Policy = { ...policy, max_fee_bps: 100 };
    expect(refusal(() => check(intent("deposit", 500), d, self, lower))).toBe("the fee of 10 USDC is above the 1% rate on 500 (at most 5)");
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [fee!, feeOf(0n), approve!, supply!]), self, policy))).toBe("the envelope pays 2 fees; at most one is allowed");
    const r = envelope("repay", 50);
    expect(refusal(() => check(intent("repay", 50), withSteps(r, [...r.steps.map((s) => s.unsigned_transaction), feeOf(1n)]), self, policy))).toBe("a repay is free (a downward leg); the envelope pays a fee");
  });

  it("deposit: the supply and the fee add up to the amount; the approval equals the supply", () => {
    const d = envelope("deposit", 500);
    const [fee] = d.steps.map((s) => s.unsigned_transaction);
    const supplyOf = (micro: bigint) => pool("supply", [m.usdc, micro, self, 0]);
    const approveOf = (micro: bigint) => erc20(m.usdc, "approve", [m.pool, micro]);
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_001n), supplyOf(490_000_001n)]), self, policy))).toBe(
      "the deposit moves 500.000001 USDC (supply 490.000001 + fee 10), not the 500 asked for",
    );
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_001n), supplyOf(490_000_000n)]), self, policy))).toBe("the approval does not equal the supply");
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [fee!, approveOf(490_000_000n)]), self, policy))).toBe("the deposit needs exactly one USDC supply to the Pool; the envelope has 0");
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [fee!, supplyOf(490_000_000n)]), self, policy))).toBe("the deposit needs exactly one USDC approval to the Pool; the envelope has 0");
    // an extra call of a role the action does not use
    expect(refusal(() => check(intent("deposit", 500), withSteps(d, [...d.steps.map((s) => s.unsigned_transaction), pool("repay", [m.usdc, 1n, 2n, self])]), self, policy))).toBe("the deposit needs 3 calls; the envelope has 4");
  });

  it("borrow and repay: the amount is the intent's", () => {
    const b = envelope("borrow", 1000);
    expect(refusal(() => check(intent("borrow", 999), withSteps(b, [pool("borrow", [m.usdc, 1_000_000_000n, 2n, 0, self])]), self, policy))).toBe("the borrow takes 1000 USDC, not 999");
    expect(refusal(() => check(intent("borrow", 1000), withSteps(b, [erc20(m.usdc, "transfer", [FEE, 1n])]), self, policy))).toBe("the borrow needs exactly one USDC borrow from the Pool; the envelope has 0");
    const r = envelope("repay", 50);
    const approveOf = (micro: bigint) => erc20(m.usdc, "approve", [m.pool, micro]);
    expect(refusal(() => check(intent("repay", 50), withSteps(r, [approveOf(50_000_000n), pool("repay", [m.usdc, 60_000_000n, 2n, self])]), self, policy))).toBe("the repayment moves 60 USDC, not 50");
    expect(refusal(() => check(intent("repay", 50), withSteps(r, [approveOf(60_000_000n), pool("repay", [m.usdc, 50_000_000n, 2n, self])]), self, policy))).toBe("the approval does not equal the repayment");
    expect(refusal(() => check(intent("repay", 50), withSteps(r, [approveOf(50_000_000n), pool("repay", [m.usdc, 50_000_000n, 2n, self]), approveOf(1n)]), self, policy))).toMatch(/exactly one USDC approval/);
  });

  it("convert: the swap buys the asked-for asset with the net amount; the supply is what the swap guarantees", () => {
    const c = envelope("convert", 3000, "eth");
    const steps = c.steps.map((s) => s.unsigned_transaction);
    expect(refusal(() => check(intent("convert", 3000, "btc"), c, self, policy))).toBe("the convert needs exactly one USDC to btc swap; the envelope has 0");
    const swapCall = checkStep(policy, steps[2]!, self);
    const minOut = (swapCall.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
    const supplyMore = pool("supply", [m.weth, minOut + 1n, self, 0]);
    const approveMore = erc20(m.weth, "approve", [m.pool, minOut + 1n]);
    expect(refusal(() => check(intent("convert", 3000, "eth"), withSteps(c, [steps[0]!, steps[1]!, steps[2]!, approveMore, supplyMore]), self, policy))).toBe(
      "the supply of the bought asset does not match the swap's guaranteed output",
    );
    expect(refusal(() => check(intent("convert", 3000, "eth"), withSteps(c, [steps[0]!, erc20(m.usdc, "approve", [swapRouter02(8453), 1n]), steps[2]!, steps[3]!, steps[4]!]), self, policy))).toBe(
      "the USDC approval does not equal the swap",
    );
    expect(refusal(() => check(intent("convert", 2999, "eth"), c, self, policy))).toMatch(/the conversion moves 3000 USDC, not 2999|above the 2% rate/);
  });
});

describe("checkIntent: each call is the right token to the right contract", () => {
  const arbPool = AAVE_MARKETS.arbitrum.pool;
  const arbRouter = swapRouter02(42161);
  /** the planned envelope with step `i` replaced */
  const swapStep = (e: ReturnType<typeof envelope>, i: number, t: StepTx) => withSteps(e, e.steps.map((s, j) => (j === i ? t : s.unsigned_transaction)));
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
    for (const [t, i, why] of cases) expect(refusal(() => check(intent("deposit", 500), swapStep(d, i, t), self, policy))).toMatch(why);
    expect(approve).toBeDefined();
  });

  it("borrow and repay", () => {
    const b = envelope("borrow", 1000);
    expect(refusal(() => check(intent("borrow", 1000), swapStep(b, 0, onArbPool(b.steps[0]!.unsigned_transaction)), self, policy))).toMatch(/not to the market's Pool/);
    const r = envelope("repay", 50);
    const cases: [StepTx, number, RegExp][] = [
      [pool("repay", [m.weth, 50_000_000n, 2n, self]), 1, /exactly one USDC repayment to the Pool/],
      [onArbPool(r.steps[1]!.unsigned_transaction), 1, /not to the market's Pool/],
      [erc20(m.usdc, "approve", [swapRouter02(8453), 50_000_000n]), 0, /exactly one USDC approval to the Pool/],
      [erc20(m.weth, "approve", [m.pool, 50_000_000n]), 0, /exactly one USDC approval to the Pool/],
    ];
    for (const [t, i, why] of cases) expect(refusal(() => check(intent("repay", 50), swapStep(r, i, t), self, policy))).toMatch(why);
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
    for (const [t, i, why] of cases) expect(refusal(() => check(intent("convert", 3000, "eth"), swapStep(c, i, t), self, policy))).toMatch(why);
    // the swap moves one micro more than the intent allows (approval matched): refused on the total
    const more = withSteps(c, [steps[0]!, erc20(m.usdc, "approve", [swapRouter02(8453), net + 1n]), swap({ amountIn: net + 1n, amountOutMinimum: minOut }), steps[3]!, steps[4]!]);
    expect(refusal(() => check(intent("convert", 3000, "eth"), more, self, policy))).toBe(`the conversion moves 3000.000001 USDC, not 3000`);
    // supplying less than the guaranteed output is fine; its approval must match it
    const less = withSteps(c, [steps[0]!, steps[1]!, steps[2]!, erc20(m.weth, "approve", [m.pool, minOut - 1n]), pool("supply", [m.weth, minOut - 1n, self, 0])]);
    expect(check(intent("convert", 3000, "eth"), less, self, policy)).toHaveLength(5);
    const mismatched = withSteps(c, [steps[0]!, steps[1]!, steps[2]!, erc20(m.weth, "approve", [m.pool, minOut]), pool("supply", [m.weth, minOut - 1n, self, 0])]);
    expect(refusal(() => check(intent("convert", 3000, "eth"), mismatched, self, policy))).toBe("the supply of the bought asset does not match the swap's guaranteed output");
  });

  it("a known function outside the roles is refused even when the policy allows it", () => {
    const allowing: Policy = { ...policy, allowed_functions: [...policy.allowed_functions, "getReserveData"] };
    expect(refusal(() => checkStep(allowing, pool("getReserveData", [m.usdc]), self))).toBe("function getReserveData is not allowed");
    expect(refusal(() => checkStep(policy, pool("getReserveData", [m.usdc]), self))).toBe("function getReserveData is not allowed");
    // a withdrawal goes to this wallet only
    expect(checkStep(policy, pool("withdraw", [m.usdc, 1n, self]), self)).toMatchObject({ role: "withdraw", amount: 1n, usdcMoved: 0n });
    expect(refusal(() => checkStep(policy, pool("withdraw", [m.usdc, 1n, "0x000000000000000000000000000000000000dEaD"]), self))).toBe("withdrawal to 0x000000000000000000000000000000000000dEaD, not this wallet");
    expect(refusal(() => checkStep(policy, tx(m.pool, "0x12345678aabbccdd"), self))).toBe("calldata 0x12345678 is not a known function");
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
    expect([policy.per_transaction_cap_usdc, policy.daily_cap_usdc, policy.x402_max_price_usdc, policy.x402_daily_budget_usdc, policy.max_fee_bps]).toEqual([10_000, 50_000, 0.1, 5, 200]);
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
});
