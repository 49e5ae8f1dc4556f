/**
 * The helpers every action's signer rule is written with (signer-rule.ts):
 * count, only, fee and floor over an envelope's decoded calls, each refusal
 * with its exact reason. The calls here are written by hand (what the signer
 * agent decodes: signer-agent/src/policy.test.ts runs them on real calldata).
 */
import { getAddress } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../../../test/helpers/refusal";
import { AAVE_MARKETS } from "../contracts/chains";
import { swapRouter02 } from "../contracts/uniswap";
import { PolicyRefusal, signerRuleContext, type DecodedCall, type SwapFloor } from "./signer-rule";

const m = AAVE_MARKETS.base;
const market = {
  ...m,
  pool: getAddress(m.pool),
  usdc: getAddress(m.usdc),
  weth: getAddress(m.weth),
  btc: getAddress(m.btc),
  router: getAddress(swapRouter02(m.chainId)),
};
const FEE = getAddress("0x000000000000000000000000000000000000fEe5");

const call = (role: DecodedCall["role"], over: Partial<DecodedCall> = {}): DecodedCall => ({
  functionName: role,
  role,
  args: [],
  to: market.pool,
  token: market.usdc,
  amount: 0n,
  usdcMoved: 0n,
  ...over,
});
const fee = (amount: bigint) => call("fee", { functionName: "transfer", to: market.usdc, token: market.usdc, amount, counterparty: FEE, usdcMoved: amount });
/** a swap of `amountIn` of `token` for at least `minOut` of `tokenOut` */
const swap = (token: `0x${string}`, tokenOut: `0x${string}`, amountIn: bigint, minOut: bigint) =>
  call("swap", {
    functionName: "exactInputSingle",
    to: market.router,
    token,
    counterparty: tokenOut,
    amount: amountIn,
    args: [{ tokenIn: token, tokenOut, amountIn, amountOutMinimum: minOut }],
  });
const ctxOf = (calls: DecodedCall[], o: { action?: string; amount?: bigint; maxFee?: bigint; maxFeeBps?: number; floors?: SwapFloor[] } = {}) =>
  signerRuleContext(o.action ?? "deposit", calls, market, o.amount ?? 500_000_000n, o.maxFee ?? 10_000_000n, o.maxFeeBps ?? 200, o.floors);

describe("signerRuleContext", () => {
  it("carries the market, its Pool, its USDC and its router; refuse throws a PolicyRefusal with the reason", () => {
    const x = ctxOf([]);
    expect(x.market).toBe(market);
    expect([x.pool, x.usdc, x.router]).toEqual([market.pool, market.usdc, market.router]);
    expect(x.router).not.toBe(x.pool);
    expect(refusalOf(() => x.refuse("no"))).toBe("no");
    expect(new PolicyRefusal("x")).toBeInstanceOf(Error);
  });

  it("count: the calls of a role, and only of it", () => {
    const x = ctxOf([call("approve"), call("supply"), call("approve"), fee(1n)]);
    expect(x.count("approve")).toBe(2);
    expect(x.count("supply")).toBe(1);
    expect(x.count("fee")).toBe(1);
    expect(x.count("borrow")).toBe(0);
    expect(ctxOf([]).count("approve")).toBe(0);
  });

  it("only: the one call of the role that matches; none or several refused, naming what was expected and how many there are", () => {
    const weth = call("supply", { token: market.weth, amount: 7n });
    const usdc = call("supply", { token: market.usdc, amount: 5n });
    const x = ctxOf([call("approve", { token: market.usdc }), weth, usdc]);
    expect(x.only("supply", (c) => c.token === market.usdc, "USDC supply to the Pool")).toBe(usdc);
    expect(x.only("supply", (c) => c.token === market.weth, "WETH supply")).toBe(weth);
    // the role counts as much as the predicate: the approval of USDC is no USDC supply
    expect(refusalOf(() => x.only("borrow", (c) => c.token === market.usdc, "USDC borrow from the Pool"))).toBe(
      "the deposit needs exactly one USDC borrow from the Pool; the envelope has 0",
    );
    expect(refusalOf(() => x.only("supply", () => true, "supply"))).toBe("the deposit needs exactly one supply; the envelope has 2");
    expect(refusalOf(() => x.only("supply", () => false, "supply of nothing"))).toBe("the deposit needs exactly one supply of nothing; the envelope has 0");
    expect(refusalOf(() => ctxOf([usdc, usdc, usdc], { action: "repay" }).only("supply", () => true, "thing"))).toBe(
      "the repay needs exactly one thing; the envelope has 3",
    );
  });

  it("fee: 0 without one; the one fee up to the maximum; above it refused with the rate, the amount and the maximum", () => {
    expect(ctxOf([call("approve"), call("supply", { amount: 9n })]).fee()).toBe(0n);
    expect(ctxOf([fee(10_000_000n), call("supply")]).fee()).toBe(10_000_000n);
    expect(ctxOf([call("supply"), fee(0n)]).fee()).toBe(0n);
    expect(ctxOf([fee(3n)], { maxFee: 3n }).fee()).toBe(3n);
    expect(refusalOf(() => ctxOf([fee(10_000_001n)]).fee())).toBe("the fee of 10.000001 USDC is above the 2% rate on 500 (at most 10)");
    expect(refusalOf(() => ctxOf([fee(4n)], { maxFee: 3n, amount: 150n, maxFeeBps: 150 }).fee())).toBe(
      "the fee of 0.000004 USDC is above the 1.5% rate on 0.00015 (at most 0.000003)",
    );
    // a zero maximum: any fee at all is refused
    expect(refusalOf(() => ctxOf([fee(1n)], { maxFee: 0n, maxFeeBps: 0 }).fee())).toBe("the fee of 0.000001 USDC is above the 0% rate on 500 (at most 0)");
  });

  it("fee: at most one, even when each is small and together they are under the maximum", () => {
    expect(refusalOf(() => ctxOf([fee(1n), call("supply"), fee(1n)]).fee())).toBe("the envelope pays 2 fees; at most one is allowed");
    expect(refusalOf(() => ctxOf([fee(0n), fee(0n), fee(0n)]).fee())).toBe("the envelope pays 3 fees; at most one is allowed");
  });

  it("floor: the swap's bound at or above the signer's floor for its tokens and amount in passes", () => {
    const floors: SwapFloor[] = [{ token: market.weth, tokenOut: market.usdc, amountIn: 10n ** 18n, floor: 2_900_000_000n }];
    expect(() => ctxOf([], { floors }).floor(swap(market.weth, market.usdc, 10n ** 18n, 2_900_000_000n))).not.toThrow();
    expect(() => ctxOf([], { floors }).floor(swap(market.weth, market.usdc, 10n ** 18n, 2_900_000_001n))).not.toThrow();
    expect(ctxOf([], { floors }).floor(swap(market.weth, market.usdc, 10n ** 18n, 3_000_000_000n))).toBeUndefined();
  });

  it("floor: under the floor refused, shown in USDC when it buys USDC and in units otherwise", () => {
    const sellFloors: SwapFloor[] = [{ token: market.weth, tokenOut: market.usdc, amountIn: 10n ** 18n, floor: 2_900_000_000n }];
    expect(refusalOf(() => ctxOf([], { action: "sell", floors: sellFloors }).floor(swap(market.weth, market.usdc, 10n ** 18n, 2_899_999_999n)))).toBe(
      "the sell's swap accepts as little as 2899.999999 USDC, under the 2900 USDC the policy's maximum slippage allows",
    );
    const buyFloors: SwapFloor[] = [{ token: market.usdc, tokenOut: market.weth, amountIn: 2_940_000_000n, floor: 970_000_000_000_000_000n }];
    expect(
      refusalOf(() => ctxOf([], { action: "convert", floors: buyFloors }).floor(swap(market.usdc, market.weth, 2_940_000_000n, 969_999_999_999_999_999n))),
    ).toBe("the convert's swap accepts as little as 969999999999999999 units, under the 970000000000000000 units the policy's maximum slippage allows");
    expect(refusalOf(() => ctxOf([], { action: "convert", floors: buyFloors }).floor(swap(market.usdc, market.weth, 2_940_000_000n, 0n)))).toBe(
      "the convert's swap accepts as little as 0 units, under the 970000000000000000 units the policy's maximum slippage allows",
    );
  });

  it("floor: found by the swap's token, its output token and its amount in, all three; none found refused", () => {
    const floors: SwapFloor[] = [
      { token: market.weth, tokenOut: market.usdc, amountIn: 100n, floor: 50n },
      { token: market.btc, tokenOut: market.usdc, amountIn: 100n, floor: 70n },
      { token: market.weth, tokenOut: market.btc, amountIn: 100n, floor: 90n },
      { token: market.weth, tokenOut: market.usdc, amountIn: 200n, floor: 120n },
    ];
    const x = ctxOf([], { action: "exit", floors });
    // each swap is held to its own floor, not another's: 60 passes the WETH floor of 50 but not the BTC one of 70
    expect(() => x.floor(swap(market.weth, market.usdc, 100n, 50n))).not.toThrow();
    expect(refusalOf(() => x.floor(swap(market.weth, market.usdc, 100n, 49n)))).toBe(
      "the exit's swap accepts as little as 0.000049 USDC, under the 0.00005 USDC the policy's maximum slippage allows",
    );
    expect(() => x.floor(swap(market.btc, market.usdc, 100n, 70n))).not.toThrow();
    expect(refusalOf(() => x.floor(swap(market.btc, market.usdc, 100n, 60n)))).toMatch(/under the 0.00007 USDC/);
    expect(refusalOf(() => x.floor(swap(market.weth, market.btc, 100n, 80n)))).toBe(
      "the exit's swap accepts as little as 80 units, under the 90 units the policy's maximum slippage allows",
    );
    expect(refusalOf(() => x.floor(swap(market.weth, market.usdc, 200n, 100n)))).toMatch(/under the 0.00012 USDC/);
    // no floor for these tokens and this amount in: not signed, whatever its bound
    expect(refusalOf(() => x.floor(swap(market.weth, market.usdc, 150n, 10n ** 30n)))).toBe("no quote of its own for the exit's swap: not signed");
    expect(refusalOf(() => x.floor(swap(market.usdc, market.weth, 100n, 10n ** 30n)))).toBe("no quote of its own for the exit's swap: not signed");
    expect(refusalOf(() => x.floor(swap(market.btc, market.weth, 100n, 10n ** 30n)))).toBe("no quote of its own for the exit's swap: not signed");
    // without floors at all (the default), every swap is refused
    expect(refusalOf(() => ctxOf([], { action: "sell" }).floor(swap(market.weth, market.usdc, 100n, 10n ** 30n)))).toBe(
      "no quote of its own for the sell's swap: not signed",
    );
  });
});
