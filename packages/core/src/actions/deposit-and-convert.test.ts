/**
 * The deposit and convert declarations, pure: their requests, the ledger
 * (what the net amount buys at the sandbox's prices), the calls of their
 * envelopes decoded (the fee, the approvals, the bounded swap, the supply),
 * their receipts, and the signer's rule with each way a tampered envelope is
 * refused.
 */
import { decodeFunctionData, getAddress } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../../../test/helpers/refusal";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS } from "../contracts/chains";
import { ERC20_ABI } from "../contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "../contracts/uniswap";
import { convert, ConvertRequest } from "./convert";
import { deposit, DepositRequest } from "./deposit";
import { signerRuleContext, type DecodedCall, type SwapFloor } from "./signer-rule";
import { stepContext } from "./steps";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const FEE = getAddress("0x000000000000000000000000000000000000fee5");
const m = AAVE_MARKETS.base;
const router = swapRouter02(m.chainId);
const c = stepContext("base", wallet);
const h = (over: Partial<{ btcUnits: bigint; ethUnits: bigint; usdcMicro: bigint; debtMicro: bigint }> = {}) => ({
  btcUnits: 0n,
  ethUnits: 0n,
  usdcMicro: 0n,
  debtMicro: 0n,
  ...over,
});
const fee = (feeMicro: bigint) => ({ feeMicro, feeBps: 200n, basis: "2% of the amount" });
const call = (role: DecodedCall["role"], token: `0x${string}`, amount: bigint, over: Partial<DecodedCall> = {}): DecodedCall => ({
  functionName: role,
  role,
  args: [],
  to: m.pool,
  token,
  amount,
  usdcMoved: 0n,
  ...over,
});
const decode = (data: `0x${string}`) => decodeFunctionData({ abi: [...AAVE_POOL_ABI, ...ERC20_ABI, ...SWAP_ROUTER_02_ABI], data });

describe("deposit", () => {
  it("at least 100 USDC; an allocation adds up to 100; 50/50 by default", () => {
    expect([deposit.direction, deposit.fee, deposit.minimumMicro]).toEqual(["up", "deposit", 100_000_000n]);
    expect(DepositRequest.safeParse({ amount_usdc: 99.99 }).success).toBe(false);
    expect(DepositRequest.safeParse({ amount_usdc: 100 }).success).toBe(true);
    expect(DepositRequest.safeParse({ amount_usdc: 100, allocation: { btc: 60, eth: 30 } }).success).toBe(false);
    expect(deposit.params({ amount_usdc: 100, allocation: { btc: 70, eth: 30 } })).toEqual({ allocation: { btc: 70, eth: 30 } });
    expect(deposit.params({ amount_usdc: 100 })).toEqual({});
  });

  it("on a ledger, as on a chain: the net amount supplied as USDC, paid from the idle USDC first; the allocation buys nothing", () => {
    // 1,000 USDC less a 20 fee: 980 supplied, whatever the allocation; the idle 300 pays part of it
    const r = deposit.ledger(h({ btcUnits: 1n, ethUnits: 2n, usdcMicro: 300_000_000n }), 1_000_000_000n, 20_000_000n, { allocation: { btc: 70, eth: 30 } });
    expect(r).toEqual({ holdings: { ...h({ btcUnits: 1n, ethUnits: 2n }), suppliedUsdcMicro: 980_000_000n }, bought: {}, repaidMicro: 0n });
    // idle USDC beyond the amount stays idle
    expect(deposit.ledger(h({ usdcMicro: 700_000_000n }), 600_000_000n, 0n, {}).holdings).toEqual({
      ...h({ usdcMicro: 100_000_000n }),
      suppliedUsdcMicro: 600_000_000n,
    });
    expect(() => deposit.ledger(h(), 600_000_000n, 0n, { allocation: { btc: 50, eth: 40 } })).toThrow("allocation btc and eth must add up to 100");
    expect(deposit.walletNeeds(5n, { debtMicro: 0n, holdings: { aUsdc: 0n, aWeth: 0n, aBtc: 0n, walletUsdc: 0n } }, {})).toEqual({ usdcMicro: 5n });
    expect(deposit.sandboxUsdcMicro(5n)).toBe(5n);
  });

  it("plans the fee, the approval of the net amount to the Pool, then its supply for the wallet (main); its receipt", () => {
    const steps = deposit.plan(c, { amountMicro: 1_000_000_000n, feeMicro: 20_000_000n, feeRecipient: FEE, params: {} });
    expect(steps.map((s) => [s.kind, s.main, s.to])).toEqual([
      ["fee_transfer", false, m.usdc],
      ["approval", false, m.usdc],
      ["pool_call", true, m.pool],
    ]);
    expect(steps.map((s) => decode(s.data))).toEqual([
      { functionName: "transfer", args: [FEE, 20_000_000n] },
      { functionName: "approve", args: [m.pool, 980_000_000n] },
      { functionName: "supply", args: [m.usdc, 980_000_000n, wallet, 0] },
    ]);
    const r = { id: "dep_1", amountMicro: 1_000_000_000n, fee: fee(20_000_000n), ltvBefore: 0, debtAfterMicro: 0n };
    expect(deposit.receipt({ ...r, params: {}, ledger: null })).toEqual({
      deposit_id: "dep_1",
      net_amount: 980,
      fee_basis: "2% of the amount",
      allocation: { btc: 50, eth: 50 },
      supplied_usdc: 980,
    });
    expect(deposit.receipt({ ...r, params: { allocation: { btc: 70, eth: 30 } }, ledger: { holdings: h(), bought: {}, repaidMicro: 0n } })).toEqual({
      deposit_id: "dep_1",
      net_amount: 980,
      fee_basis: "2% of the amount",
      allocation: { btc: 70, eth: 30 },
      supplied_usdc: 980,
    });
    expect(deposit.cli.body(100, {})).toEqual({ amount_usdc: 100 });
  });

  it("the signer's rule: the supply and the fee add up to the amount, the approval equals the supply, at most one fee within the rate", () => {
    const check = (calls: DecodedCall[], amountMicro: bigint, maxFee = 20n) =>
      deposit.signer.check(calls, { amountMicro }, signerRuleContext("deposit", calls, { ...m, router }, amountMicro, maxFee, 200));
    const f = call("fee", m.usdc, 20n, { to: m.usdc, counterparty: FEE });
    const a = call("approve", m.usdc, 980n, { to: m.usdc, counterparty: m.pool });
    const s = call("supply", m.usdc, 980n);
    expect(check([f, a, s], 1_000n)).toBe(3);
    expect(check([call("approve", m.usdc, 1_000n, { to: m.usdc, counterparty: m.pool }), call("supply", m.usdc, 1_000n)], 1_000n)).toBe(2);
    expect(refusalOf(() => check([f, a, s], 999n))).toBe("the deposit moves 0.001 USDC (supply 0.00098 + fee 0.00002), not the 0.000999 asked for");
    expect(refusalOf(() => check([f, { ...a, amount: 981n }, s], 1_000n))).toBe("the approval does not equal the supply");
    expect(refusalOf(() => check([f, a, s], 1_000n, 19n))).toMatch(/^the fee of 0.00002 USDC is above the 2% rate/);
    expect(refusalOf(() => check([f, f, a, s], 1_020n, 40n))).toBe("the envelope pays 2 fees; at most one is allowed");
    expect(refusalOf(() => check([f, a, { ...s, token: m.weth }], 1_000n))).toBe("the deposit needs exactly one USDC supply to the Pool; the envelope has 0");
    expect(refusalOf(() => check([f, a, { ...s, to: m.usdc }], 1_000n))).toMatch(/USDC supply to the Pool; the envelope has 0$/);
    expect(refusalOf(() => check([f, { ...a, counterparty: router }, s], 1_000n))).toBe(
      "the deposit needs exactly one USDC approval to the Pool; the envelope has 0",
    );
    expect(refusalOf(() => check([f, { ...a, token: m.weth }, s], 1_000n))).toMatch(/USDC approval to the Pool; the envelope has 0$/);
  });
});

describe("convert", () => {
  it("buys BTC or ETH (a target is required); ETH unless the target says BTC", () => {
    expect([convert.direction, convert.fee]).toEqual(["up", "buy"]);
    expect(ConvertRequest.safeParse({ amount_usdc: 5 }).success).toBe(false);
    expect(ConvertRequest.safeParse({ amount_usdc: 5, target: "doge" }).success).toBe(false);
    expect(convert.params({ amount_usdc: 5, target: "btc" })).toEqual({ target: "btc" });
    expect(convert.params({ amount_usdc: 5 })).toEqual({});
    expect(convert.quote!({ target: "btc" }, 1_000n, 20n)).toEqual({ from: "USDC", to: "BTC", units: 980n });
    expect(convert.quote!({}, 1_000n, 20n)).toEqual({ from: "USDC", to: "ETH", units: 980n });
  });

  it("on a ledger, as on a chain: the idle USDC pays the amount, the net swapped at the sandbox's price, 1% under it supplied; too little idle USDC is refused", () => {
    expect(convert.ledger(h({ usdcMicro: 1_000_000_000n, btcUnits: 5n }), 612_000_000n, 12_000_000n, { target: "btc" })).toEqual({
      holdings: h({ usdcMicro: 388_000_000n, btcUnits: 990_005n }),
      bought: { BTC: 990_000n },
      repaidMicro: 0n,
    });
    // the quote the plan made (params.quoted) is what the swap is bounded under
    expect(convert.ledger(h({ usdcMicro: 612_000_000n, ethUnits: 5n }), 612_000_000n, 12_000_000n, { quoted: "200000000000000000" })).toEqual({
      holdings: h({ usdcMicro: 0n, ethUnits: 198_000_000_000_000_005n }),
      bought: { ETH: 198_000_000_000_000_000n },
      repaidMicro: 0n,
    });
    expect(() => convert.ledger(h({ usdcMicro: 611_999_999n }), 612_000_000n, 0n, {})).toThrow("convert needs 612 USDC idle; the treasury holds 611.999999");
    expect(convert.walletNeeds(5n, { debtMicro: 0n, holdings: { aUsdc: 0n, aWeth: 0n, aBtc: 0n, walletUsdc: 0n } }, {})).toEqual({ usdcMicro: 5n });
    expect(convert.sandboxUsdcMicro(5n)).toBe(5n);
  });

  it("plans the fee, the USDC approval to the router, the swap bounded 1% under the pool's quote, then the bought asset's approval and supply of the bound (main)", () => {
    const steps = convert.plan(c, { amountMicro: 612_000_000n, feeMicro: 12_000_000n, feeRecipient: FEE, params: { target: "btc", quoted: "1000000" } });
    expect(steps.map((s) => [s.kind, s.main, s.to])).toEqual([
      ["fee_transfer", false, m.usdc],
      ["approval", false, m.usdc],
      ["swap", false, router],
      ["approval", false, m.btc],
      ["pool_call", true, m.pool],
    ]);
    expect(steps.map((s) => decode(s.data))).toEqual([
      { functionName: "transfer", args: [FEE, 12_000_000n] },
      { functionName: "approve", args: [router, 600_000_000n] },
      {
        functionName: "exactInputSingle",
        args: [{ tokenIn: m.usdc, tokenOut: m.btc, fee: 500, recipient: wallet, amountIn: 600_000_000n, amountOutMinimum: 990_000n, sqrtPriceLimitX96: 0n }],
      },
      { functionName: "approve", args: [m.pool, 990_000n] },
      { functionName: "supply", args: [m.btc, 990_000n, wallet, 0] },
    ]);
    // without the pool's quote: the sandbox's price (600 USDC = 0.2 ETH), less 1%
    const eth = convert.plan(c, { amountMicro: 612_000_000n, feeMicro: 12_000_000n, feeRecipient: FEE, params: {} });
    expect(decode(eth[4]!.data)).toEqual({ functionName: "supply", args: [m.weth, 198_000_000_000_000_000n, wallet, 0] });
  });

  it("its receipt: the target and the estimated amount (the ledger's purchase, else the sandbox's price)", () => {
    const r = { id: "cnv_1", amountMicro: 612_000_000n, fee: fee(12_000_000n), ltvBefore: 0, debtAfterMicro: 0n };
    expect(convert.receipt({ ...r, params: { target: "btc" }, ledger: null })).toEqual({
      conversion_id: "cnv_1",
      target: "btc",
      estimated_amount: 0.01,
      fee_basis: "2% of the amount",
    });
    expect(convert.receipt({ ...r, params: { target: "eth" }, ledger: { holdings: h(), bought: { ETH: 5n * 10n ** 17n }, repaidMicro: 0n } })).toMatchObject({
      target: "eth",
      estimated_amount: 0.5,
    });
    expect(convert.receipt({ ...r, params: { target: "eth" }, ledger: { holdings: h(), bought: {}, repaidMicro: 0n } })).toMatchObject({ estimated_amount: 0 });
    expect(convert.cli.body(5, { target: "btc" })).toEqual({ amount_usdc: 5, target: "btc" });
    expect(convert.cli.body(5, {})).toEqual({ amount_usdc: 5 });
  });

  it("the signer's rule: the swap and the fee add up to the amount, the approvals match, the swap at no less than the signer's floor, the supply at most the swap's bound", () => {
    const swapArgs = (minOut: bigint) => [{ amountOutMinimum: minOut }];
    const f = call("fee", m.usdc, 20n, { to: m.usdc, counterparty: FEE });
    const ai = call("approve", m.usdc, 980n, { to: m.usdc, counterparty: router });
    const sw = call("swap", m.usdc, 980n, { to: router, counterparty: m.weth, args: swapArgs(50n) });
    const ao = call("approve", m.weth, 50n, { to: m.weth, counterparty: m.pool });
    const su = call("supply", m.weth, 50n);
    const floors: SwapFloor[] = [{ token: m.usdc, tokenOut: m.weth, amountIn: 980n, floor: 50n }];
    const check = (calls: DecodedCall[], amountMicro = 1_000n, target: "btc" | "eth" = "eth", fl = floors) =>
      convert.signer.check(calls, { amountMicro, target }, signerRuleContext("convert", calls, { ...m, router }, amountMicro, 20n, 200, fl));
    expect(check([f, ai, sw, ao, su])).toBe(5);
    expect(check([{ ...ai, amount: 1_000n }, { ...sw, amount: 1_000n }, ao, su], 1_000n, "eth", [{ ...floors[0]!, amountIn: 1_000n }])).toBe(4);
    expect(refusalOf(() => check([f, ai, sw, ao, su], 1_001n))).toBe("the conversion moves 0.001 USDC, not 0.001001");
    expect(refusalOf(() => check([f, { ...ai, amount: 979n }, sw, ao, su]))).toBe("the USDC approval does not equal the swap");
    expect(refusalOf(() => check([f, ai, sw, ao, su], 1_000n, "eth", [{ ...floors[0]!, floor: 51n }]))).toBe(
      "the convert's swap accepts as little as 50 units, under the 51 units the policy's maximum slippage allows",
    );
    expect(refusalOf(() => check([f, ai, sw, { ...ao, amount: 51n }, { ...su, amount: 51n }]))).toBe(
      "the supply of the bought asset does not match the swap's guaranteed output",
    );
    expect(refusalOf(() => check([f, ai, sw, { ...ao, amount: 49n }, su]))).toBe("the supply of the bought asset does not match the swap's guaranteed output");
    expect(check([f, ai, sw, { ...ao, amount: 49n }, { ...su, amount: 49n }])).toBe(5);
    // the swap buys another asset than asked, or goes elsewhere than the router
    expect(refusalOf(() => check([f, ai, sw, ao, su], 1_000n, "btc"))).toBe("the convert needs exactly one USDC to btc swap; the envelope has 0");
    expect(refusalOf(() => check([f, ai, { ...sw, to: m.pool }, ao, su]))).toBe("the convert needs exactly one USDC to eth swap; the envelope has 0");
    expect(refusalOf(() => check([f, ai, { ...sw, token: m.weth }, ao, su]))).toMatch(/USDC to eth swap; the envelope has 0$/);
    expect(refusalOf(() => check([f, { ...ai, counterparty: m.pool }, sw, ao, su]))).toBe(
      "the convert needs exactly one USDC approval to the router; the envelope has 0",
    );
    expect(refusalOf(() => check([f, { ...ai, token: m.weth }, sw, ao, su]))).toMatch(/USDC approval to the router; the envelope has 0$/);
    expect(refusalOf(() => check([f, ai, sw, ao, { ...su, token: m.btc }]))).toBe(
      "the convert needs exactly one supply of the bought asset; the envelope has 0",
    );
    expect(refusalOf(() => check([f, ai, sw, ao, { ...su, to: m.weth }]))).toMatch(/supply of the bought asset; the envelope has 0$/);
    expect(refusalOf(() => check([f, ai, sw, { ...ao, counterparty: router }, su]))).toBe(
      "the convert needs exactly one approval of the bought asset to the Pool; the envelope has 0",
    );
    expect(refusalOf(() => check([f, ai, sw, { ...ao, token: m.usdc }, su]))).toMatch(/approval of the bought asset to the Pool; the envelope has 0$/);
  });
});
