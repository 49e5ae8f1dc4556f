/**
 * The sell declaration, pure: its request, its value at a price, the safe
 * amount in the asset's units, the ledger, the wallet's needs, the three
 * calls of its envelope decoded (withdraw, approval to the router, the swap
 * bounded 1% under the quote), the title and receipt a person reads, the
 * signer's rule over the calls decoded (with its own quote's floor, and the
 * envelopes it must refuse) and its command line.
 */
import { decodeFunctionData, getAddress } from "viem";
import { describe, expect, it } from "vitest";
import { refusalOf } from "../../../../test/helpers/refusal";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS, type AaveMarket } from "../contracts/chains";
import { ERC20_ABI } from "../contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "../contracts/uniswap";
import { LedgerError } from "../domain/sandbox-ledger";
import { sell, SellRequest } from "./sell";
import { signerRuleContext, type DecodedCall, type SignerIntent, type SwapFloor } from "./signer-rule";
import { stepContext, type PlannedStep } from "./steps";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const m = AAVE_MARKETS.base;
const arb = AAVE_MARKETS.arbitrum;
const price = (s: "USDC" | "ETH" | "BTC") => ({ USDC: 1_000_000n, ETH: 2_500_000_000n, BTC: 50_000_000_000n })[s];
const holdings = { btcUnits: 10_000_000n, ethUnits: 2n * 10n ** 18n, usdcMicro: 500_000_000n, debtMicro: 0n };
const HALF_ETH = 500_000_000_000_000_000n;
const plan = (chain: "base" | "arbitrum", params: Parameters<typeof sell.plan>[1]["params"]) =>
  sell.plan(stepContext(chain, wallet), { amountMicro: 0n, feeMicro: 0n, feeRecipient: wallet, params });

/** what the signer reads of a step: the calldata decoded with the contracts' ABIs, as signer-agent/src/policy.ts does */
function decoded(step: PlannedStep): DecodedCall {
  const to = getAddress(step.to);
  if (step.kind === "swap") {
    const { functionName, args } = decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: step.data });
    const p = args[0];
    return { functionName, role: "swap", args, to, token: p.tokenIn, amount: p.amountIn, counterparty: p.tokenOut, usdcMoved: 0n };
  }
  if (step.kind === "approval") {
    const { functionName, args } = decodeFunctionData({ abi: ERC20_ABI, data: step.data });
    return { functionName, role: "approve", args, to, token: to, amount: args[1] as bigint, counterparty: args[0] as `0x${string}`, usdcMoved: 0n };
  }
  const { functionName, args } = decodeFunctionData({ abi: AAVE_POOL_ABI, data: step.data });
  return { functionName, role: "withdraw", args, to, token: args[0] as `0x${string}`, amount: args[1] as bigint, usdcMoved: 0n };
}

describe("sell", () => {
  it("reads its request: ETH or BTC, in the asset's units, at most 6 decimals and 100,000", () => {
    expect(sell.params({ asset: "ETH", amount: 0.5 })).toEqual({ asset: "ETH", units: "500000000000000000" });
    expect(sell.params({ asset: "BTC", amount: 0.000001 })).toEqual({ asset: "BTC", units: "100" });
    expect(sell.params({ asset: "BTC", amount: 2 })).toEqual({ asset: "BTC", units: "200000000" });
    // no amount (the schema requires one) is no units at all
    expect(sell.params({ asset: "ETH" })).toEqual({ asset: "ETH", units: "0" });
    expect(SellRequest.safeParse({ asset: "ETH", amount: 0.5 }).success).toBe(true);
    expect(SellRequest.safeParse({ asset: "BTC", amount: 100_000 }).success).toBe(true);
    expect(SellRequest.safeParse({ asset: "USDC", amount: 1 }).success).toBe(false);
    expect(SellRequest.safeParse({ amount: 1 }).success).toBe(false);
    expect(SellRequest.safeParse({ asset: "ETH" }).success).toBe(false);
    expect(SellRequest.safeParse({ asset: "ETH", amount: 0 }).success).toBe(false);
    expect(SellRequest.safeParse({ asset: "ETH", amount: 100_000.000001 }).success).toBe(false);
    expect(SellRequest.safeParse({ asset: "ETH", amount: 0.0000001 }).success).toBe(false);
    expect(SellRequest.safeParse({ asset: "ETH", amount: 1, amount_usdc: 1 }).success).toBe(false);
  });

  it("is valued at the price (rounded down), and asks the pool's quote of the units for USDC", () => {
    expect(sell.valueMicro!({ asset: "ETH", units: String(HALF_ETH) }, price)).toBe(1_250_000_000n);
    expect(sell.valueMicro!({ asset: "BTC", units: "100" }, price)).toBe(50_000n);
    expect(sell.valueMicro!({ asset: "ETH", units: "399999999999" }, price)).toBe(999n); // 999.9999999975 micro
    expect(sell.valueMicro!({ asset: "ETH" }, price)).toBe(0n);
    expect(sell.quote!({ asset: "BTC", units: "123" }, 0n, 0n)).toEqual({ from: "BTC", to: "USDC", units: 123n });
    expect(sell.quote!({ asset: "ETH", units: "7" }, 0n, 0n)).toEqual({ from: "ETH", to: "USDC", units: 7n });
    expect(sell.quote!({}, 0n, 0n)).toEqual({ from: "ETH", to: "USDC", units: 0n });
  });

  it("states its safe amount in the asset's units, rounded down to 6 decimals", () => {
    // 1,000 USDC of ETH at 2,500 = 0.4 ETH; 1,000.000001 USDC = 0.4000000004 ETH, shown as 0.4
    expect(sell.safeUnits!({ asset: "ETH" }, 1_000_000_000n, price)).toEqual({ amount: "0.4", asset: "ETH" });
    expect(sell.safeUnits!({ asset: "ETH" }, 1_000_000_001n, price)).toEqual({ amount: "0.4", asset: "ETH" });
    // 1.234567 USDC = 0.0004938268 ETH -> 0.000493
    expect(sell.safeUnits!({ asset: "ETH" }, 1_234_567n, price)).toEqual({ amount: "0.000493", asset: "ETH" });
    // 1.234567 USDC = 0.00002469134 BTC -> 0.000024
    expect(sell.safeUnits!({ asset: "BTC" }, 1_234_567n, price)).toEqual({ amount: "0.000024", asset: "BTC" });
    expect(sell.safeUnits!({ asset: "BTC" }, 50_000_000_000n, price)).toEqual({ amount: "1", asset: "BTC" });
    // the most the rail accepts: 0.000001 BTC at 66,789.012345 is worth 66,789 micro-USDC, accepted under a safe amount of 66,789
    const odd = (s: "USDC" | "ETH" | "BTC") => ({ USDC: 1_000_000n, ETH: 2_345_678_901n, BTC: 66_789_012_345n })[s];
    expect(sell.safeUnits!({ asset: "BTC" }, 66_789n, odd)).toEqual({ amount: "0.000001", asset: "BTC" });
    expect(sell.safeUnits!({ asset: "BTC" }, 66_788n, odd)).toEqual({ amount: "0", asset: "BTC" });
  });

  it("is a free downward leg with the withdraw's rail on collateral", () => {
    expect([sell.direction, sell.fee]).toEqual(["down", "none"]);
    const p = { collateralMicro: 10_000n, debtMicro: 4_000n, liquidationThresholdBps: 8000 };
    expect(sell.effect(p, 1_000n, { feeMicro: 0n, feeBps: 0n, basis: "" })).toEqual({ ...p, collateralMicro: 9_000n });
    expect(() => sell.effect(p, 10_001n, { feeMicro: 0n, feeBps: 0n, basis: "" })).toThrow(/exceeds the collateral/);
    expect(sell.safeAmount!(p, 6000n)).toBe(3_333n); // 10,000 - ceil(4,000 / 60%)
  });

  it("on a ledger: the units leave the books and the quote comes in as idle USDC; more than is held is refused", () => {
    const eth = sell.ledger(holdings, 0n, 0n, { asset: "ETH", units: String(10n ** 18n), quoted: "2475000000" });
    expect(eth).toEqual({ holdings: { ...holdings, ethUnits: 10n ** 18n, usdcMicro: 2_975_000_000n }, bought: {}, repaidMicro: 0n });
    // all that is held can be sold
    expect(sell.ledger(holdings, 0n, 0n, { asset: "BTC", units: "10000000", quoted: "5000000000" }).holdings).toEqual({
      ...holdings,
      btcUnits: 0n,
      usdcMicro: 5_500_000_000n,
    });
    // without a quote nothing comes in
    expect(sell.ledger(holdings, 0n, 0n, { asset: "ETH", units: "1" }).holdings).toEqual({ ...holdings, ethUnits: 2n * 10n ** 18n - 1n });
    const refused = (() => {
      try {
        sell.ledger(holdings, 0n, 0n, { asset: "BTC", units: "10000001", quoted: "1" });
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(LedgerError);
    expect(refused).toMatchObject({ code: "insufficient_balance", message: "the treasury holds 0.1 BTC; 0.10000001 cannot be sold" });
    expect(() => sell.ledger(holdings, 0n, 0n, { asset: "ETH", units: String(2n * 10n ** 18n + 1n) })).toThrow(
      "the treasury holds 2 ETH; 2.000000000000000001 cannot be sold",
    );
  });

  it("on a chain: needs the units supplied (aWETH or the BTC token's aToken), spends no USDC of the wallet, asks the sandbox for none", () => {
    const position = { debtMicro: 0n, holdings: { aUsdc: 10n ** 20n, aWeth: 10n, aBtc: 3n, walletUsdc: 0n } };
    expect(sell.walletNeeds(0n, position, { asset: "ETH", units: "10" })).toEqual({ usdcMicro: 0n });
    expect(sell.walletNeeds(0n, position, { asset: "BTC", units: "3" })).toEqual({ usdcMicro: 0n });
    expect(sell.walletNeeds(0n, position, { asset: "ETH", units: "11" })).toEqual({
      usdcMicro: 0n,
      refusal: { code: "insufficient_collateral", message: "the wallet has 0.00000000000000001 ETH supplied to Aave; 0.000000000000000011 cannot be sold" },
    });
    expect(sell.walletNeeds(0n, position, { asset: "BTC", units: "10" })).toEqual({
      usdcMicro: 0n,
      refusal: { code: "insufficient_collateral", message: "the wallet has 0.00000003 BTC supplied to Aave; 0.0000001 cannot be sold" },
    });
    expect(sell.sandboxUsdcMicro(5n)).toBe(0n);
  });

  it("plans three calls on Base: the Pool's withdraw of the units to the wallet, their approval to the router, the swap for at least the quote less 1%", () => {
    const steps = plan("base", { asset: "ETH", units: String(HALF_ETH), quoted: "1250000001" });
    const router = swapRouter02(m.chainId);
    expect(steps.map((s) => [s.kind, s.main, s.to])).toEqual([
      ["pool_call", true, m.pool],
      ["approval", false, m.weth],
      ["swap", false, router],
    ]);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: steps[0]!.data })).toEqual({ functionName: "withdraw", args: [m.weth, HALF_ETH, wallet] });
    expect(decodeFunctionData({ abi: ERC20_ABI, data: steps[1]!.data })).toEqual({ functionName: "approve", args: [router, HALF_ETH] });
    expect(decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: steps[2]!.data })).toEqual({
      functionName: "exactInputSingle",
      // 1,250.000001 USDC less 1% = 1,237.50000099, rounded down
      args: [{ tokenIn: m.weth, tokenOut: m.usdc, fee: 500, recipient: wallet, amountIn: HALF_ETH, amountOutMinimum: 1_237_500_000n, sqrtPriceLimitX96: 0n }],
    });
    expect(steps.map((s) => s.summary.description)).toEqual([
      `Withdraw 0.5 WETH supplied to Aave V3 on Base to ${wallet}`,
      `Allow the Uniswap V3 SwapRouter02 (${router}) to take 0.5 WETH`,
      "Swap 0.5 WETH for at least 1237.5 USDC (1% below the pool's quote of 1250.000001 USDC) in the 0.05% pool",
    ]);
  });

  it("on Arbitrum a BTC sale is of WBTC, through Arbitrum's Pool and router", () => {
    const steps = plan("arbitrum", { asset: "BTC", units: "1500000", quoted: "900000000" });
    const router = swapRouter02(arb.chainId);
    expect(steps.map((s) => s.to)).toEqual([arb.pool, arb.btc, router]);
    expect(decodeFunctionData({ abi: AAVE_POOL_ABI, data: steps[0]!.data }).args).toEqual([arb.btc, 1_500_000n, wallet]);
    expect(decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: steps[2]!.data }).args[0]).toMatchObject({
      tokenIn: arb.btc,
      tokenOut: arb.usdc,
      amountIn: 1_500_000n,
      amountOutMinimum: 891_000_000n,
    });
    expect(steps.map((s) => s.summary.description)).toEqual([
      `Withdraw 0.015 WBTC supplied to Aave V3 on Arbitrum to ${wallet}`,
      `Allow the Uniswap V3 SwapRouter02 (${router}) to take 0.015 WBTC`,
      "Swap 0.015 WBTC for at least 891 USDC (1% below the pool's quote of 900 USDC) in the 0.05% pool",
    ]);
  });

  it("titles the sale for the person signing, with its least USDC once quoted", () => {
    expect(sell.title!({ asset: "ETH", units: String(HALF_ETH), quoted: "1250000001" }, 0n)).toBe("sell 0.5 ETH of collateral for USDC (at least 1237.5 USDC)");
    expect(sell.title!({ asset: "BTC", units: "100" }, 0n)).toBe("sell 0.000001 BTC of collateral for USDC");
  });

  it("its receipt: the sale's id, asset and amount, the quote, the least output and the slippage bound", () => {
    const r = sell.receipt({
      id: "sel_1",
      amountMicro: 0n,
      fee: { feeMicro: 0n, feeBps: 0n, basis: "" },
      params: { asset: "ETH", units: String(HALF_ETH), quoted: "1250000001" },
      ledger: null,
      ltvBefore: 0,
      debtAfterMicro: 0n,
    });
    expect(r).toEqual({ sale_id: "sel_1", asset: "ETH", amount: 0.5, quote_usdc: 1250.000001, min_out_usdc: 1237.5, slippage_bps: 100 });
    const b = sell.receipt({
      id: "sel_2",
      amountMicro: 0n,
      fee: { feeMicro: 0n, feeBps: 0n, basis: "" },
      params: { asset: "BTC", units: "1500000" },
      ledger: null,
      ltvBefore: 0,
      debtAfterMicro: 0n,
    });
    expect(b).toEqual({ sale_id: "sel_2", asset: "BTC", amount: 0.015, quote_usdc: 0, min_out_usdc: 0, slippage_bps: 100 });
  });

  describe("the signer's rule: the units withdrawn, approved to the router and swapped for USDC, bounded at least at the signer's own floor", () => {
    const router = swapRouter02(m.chainId);
    const market: AaveMarket & { router: `0x${string}` } = { ...m, router };
    const calls = plan("base", { asset: "ETH", units: String(HALF_ETH), quoted: "1250000000" }).map(decoded);
    const [w, a, s] = calls as [DecodedCall, DecodedCall, DecodedCall];
    const swapWith = (changes: Partial<{ tokenOut: `0x${string}`; amountIn: bigint; amountOutMinimum: bigint }>): DecodedCall => {
      const p = { ...(s.args[0] as object), ...changes } as { tokenOut: `0x${string}`; amountIn: bigint };
      return { ...s, args: [p], amount: p.amountIn, counterparty: p.tokenOut };
    };
    // the signer's own quote less its 1.5%: 1,231.25 USDC
    const floors: SwapFloor[] = [{ token: m.weth, tokenOut: m.usdc, amountIn: HALF_ETH, floor: 1_231_250_000n }];
    const intent: SignerIntent = { amountMicro: 0n, asset: "ETH", units: HALF_ETH, swapFloors: floors };
    const check = (cs: DecodedCall[], i: SignerIntent = intent, f: SwapFloor[] = floors, mk = market) =>
      sell.signer.check(cs, i, signerRuleContext("sell", cs, mk, 0n, 0n, 200, f));

    it("signs the three calls the gateway plans, and only those functions", () => {
      expect(sell.signer.functions).toEqual(["withdraw", "approve", "exactInputSingle"]);
      expect(check(calls)).toBe(3);
      // a bound exactly at the floor is enough
      expect(check([w, a, swapWith({ amountOutMinimum: 1_231_250_000n })])).toBe(3);
    });

    it("signs a BTC sale on Arbitrum: WBTC withdrawn, approved and swapped", () => {
      const arbRouter = swapRouter02(arb.chainId);
      const btc = plan("arbitrum", { asset: "BTC", units: "1500000", quoted: "900000000" }).map(decoded);
      const f = [{ token: arb.btc, tokenOut: arb.usdc, amountIn: 1_500_000n, floor: 886_500_000n }];
      expect(check(btc, { amountMicro: 0n, asset: "BTC", units: 1_500_000n }, f, { ...arb, router: arbRouter })).toBe(3);
      // the same calls read as an ETH sale: no WETH withdrawal
      expect(refusalOf(() => check(btc, { amountMicro: 0n, asset: "ETH", units: 1_500_000n }, f, { ...arb, router: arbRouter }))).toBe(
        "the sell needs exactly one ETH withdrawal from the Pool; the envelope has 0",
      );
    });

    it("refuses a swap bounded under its own floor", () => {
      expect(refusalOf(() => check([w, a, swapWith({ amountOutMinimum: 1_231_249_999n })]))).toBe(
        "the sell's swap accepts as little as 1231.249999 USDC, under the 1231.25 USDC the policy's maximum slippage allows",
      );
      expect(refusalOf(() => check([w, a, swapWith({ amountOutMinimum: 0n })]))).toBe(
        "the sell's swap accepts as little as 0 USDC, under the 1231.25 USDC the policy's maximum slippage allows",
      );
    });

    it("refuses when it has no floor of its own for the swap (no quote, or one for other units)", () => {
      expect(refusalOf(() => check(calls, intent, []))).toBe("no quote of its own for the sell's swap: not signed");
      expect(refusalOf(() => check(calls, intent, [{ ...floors[0]!, amountIn: HALF_ETH - 1n }]))).toBe("no quote of its own for the sell's swap: not signed");
    });

    it("refuses a swap or an approval of other units than withdrawn", () => {
      const more = HALF_ETH + 1n;
      expect(refusalOf(() => check([w, a, swapWith({ amountIn: more })], intent, [...floors, { ...floors[0]!, amountIn: more }]))).toBe(
        "the approval and the swap must move exactly the units withdrawn",
      );
      expect(refusalOf(() => check([w, { ...a, amount: more }, s]))).toBe("the approval and the swap must move exactly the units withdrawn");
    });

    it("refuses a withdrawal of other units than asked, or when no units were asked", () => {
      const six = { ...w, amount: 6n };
      expect(refusalOf(() => check([six, { ...a, amount: 6n }, swapWith({ amountIn: 6n })], intent, [{ ...floors[0]!, amountIn: 6n }]))).toBe(
        `the sale withdraws 6 units, not the ${HALF_ETH} asked for`,
      );
      expect(refusalOf(() => check(calls, { ...intent, units: undefined }))).toBe(`the sale withdraws ${HALF_ETH} units, not the ? asked for`);
    });

    it("refuses an approval to another spender than the router, or of another token", () => {
      expect(refusalOf(() => check([w, { ...a, counterparty: m.pool }, s]))).toBe("the sell needs exactly one ETH approval to the router; the envelope has 0");
      expect(refusalOf(() => check([w, a, a, s]))).toBe("the sell needs exactly one ETH approval to the router; the envelope has 2");
      expect(refusalOf(() => check([w, { ...a, token: m.btc, to: m.btc }, s]))).toBe(
        "the sell needs exactly one ETH approval to the router; the envelope has 0",
      );
    });

    it("refuses a withdrawal of another token, or from elsewhere than the Pool", () => {
      expect(refusalOf(() => check([{ ...w, token: m.btc }, a, s]))).toBe("the sell needs exactly one ETH withdrawal from the Pool; the envelope has 0");
      expect(refusalOf(() => check([{ ...w, to: router }, a, s]))).toBe("the sell needs exactly one ETH withdrawal from the Pool; the envelope has 0");
      expect(refusalOf(() => check([w, w, a, s]))).toBe("the sell needs exactly one ETH withdrawal from the Pool; the envelope has 2");
    });

    it("refuses a swap for another token than USDC, of another token, or sent elsewhere than the router", () => {
      expect(refusalOf(() => check([w, a, swapWith({ tokenOut: m.btc })]))).toBe("the sell needs exactly one ETH to USDC swap; the envelope has 0");
      expect(refusalOf(() => check([w, a, { ...s, token: m.btc }]))).toBe("the sell needs exactly one ETH to USDC swap; the envelope has 0");
      expect(refusalOf(() => check([w, a, { ...s, to: m.pool }]))).toBe("the sell needs exactly one ETH to USDC swap; the envelope has 0");
    });

    it("an intent naming no asset is checked as ETH, and its refusal says the asset is unknown", () => {
      const btc = plan("base", { asset: "BTC", units: "100", quoted: "50000" }).map(decoded);
      expect(refusalOf(() => check(btc, { amountMicro: 0n, units: 100n }))).toBe("the sell needs exactly one ? withdrawal from the Pool; the envelope has 0");
      expect(refusalOf(() => check([w, s], { ...intent, asset: undefined }))).toBe("the sell needs exactly one ? approval to the router; the envelope has 0");
      expect(refusalOf(() => check([w, a], { ...intent, asset: undefined }))).toBe("the sell needs exactly one ? to USDC swap; the envelope has 0");
    });
  });

  it("its command line: sell <amount> --asset eth|btc, ETH unless BTC is named (in any case)", () => {
    expect(sell.cli.usage).toBe("sell <amount> --asset eth|btc");
    expect(sell.cli.body(0.5, { asset: "btc" })).toEqual({ asset: "BTC", amount: 0.5 });
    expect(sell.cli.body(0.5, { asset: "BTC" })).toEqual({ asset: "BTC", amount: 0.5 });
    expect(sell.cli.body(1, { asset: "eth" })).toEqual({ asset: "ETH", amount: 1 });
    // a typo or another name of the asset is not read as ETH: the request's schema refuses it, and a missing asset
    expect(sell.cli.body(1, {})).toEqual({ amount: 1 });
    for (const flags of [{ asset: "cbbtc" }, { asset: "bt" }, {}]) expect(SellRequest.safeParse(sell.cli.body(1, flags)).success).toBe(false);
  });
});
