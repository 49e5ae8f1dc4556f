/**
 * The call builders, pure: each step's calldata decoded with the contracts'
 * own ABIs (what a signer really signs), and the summary a person reads
 * before signing (contract, function, arguments, the amount in the token's
 * decimals, the sentence). Per chain: the market's Pool, tokens (cbBTC on
 * Base, WBTC on Arbitrum) and router. Aave's "all of it" (uint256 max) reads
 * "max" and "all of the ..."; a swap's least output rounds down.
 */
import { decodeFunctionData } from "viem";
import { describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { AAVE_MARKETS } from "../contracts/chains";
import { ERC20_ABI } from "../contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "../contracts/uniswap";
import {
  ALL,
  approve,
  borrow,
  feeTransfer,
  minOutOf,
  repay,
  repayWithATokens,
  stepContext,
  supply,
  swapExactIn,
  SWAP_SLIPPAGE_BPS,
  tokenOf,
  VARIABLE_RATE,
  withdraw,
  type PlannedStep,
} from "./steps";

const wallet = "0x1111111111111111111111111111111111111111" as const;
const feeRecipient = "0x2222222222222222222222222222222222222222" as const;
const m = AAVE_MARKETS.base;
const arb = AAVE_MARKETS.arbitrum;
const base = stepContext("base", wallet);
const arbitrum = stepContext("arbitrum", wallet);
const MAX = 2n ** 256n - 1n;

/** the step as a signer's screen shows it, without its calldata (decoded on its own) */
const shown = ({ data: _data, ...rest }: PlannedStep) => rest;
const pool = (s: PlannedStep) => decodeFunctionData({ abi: AAVE_POOL_ABI, data: s.data });
const erc20 = (s: PlannedStep) => decodeFunctionData({ abi: ERC20_ABI, data: s.data });
const router = (s: PlannedStep) => decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: s.data });

describe("the chain's context and its tokens", () => {
  it("names the chain and its BTC token for people, and checksums the wallet", () => {
    expect(stepContext("base", "0x8ba1f109551bd432803012645ac136ddd64dba72")).toEqual({
      chain: "base",
      market: m,
      chainName: "Base",
      btcSymbol: "cbBTC",
      wallet: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
    });
    expect(arbitrum).toEqual({ chain: "arbitrum", market: arb, chainName: "Arbitrum", btcSymbol: "WBTC", wallet });
  });

  it("tokenOf: USDC in 6 decimals, ETH as WETH in 18, BTC as cbBTC on Base and WBTC on Arbitrum in 8", () => {
    expect(tokenOf(base, "USDC")).toEqual({ symbol: "USDC", address: m.usdc, name: "USDC", decimals: 6 });
    expect(tokenOf(base, "ETH")).toEqual({ symbol: "ETH", address: m.weth, name: "WETH", decimals: 18 });
    expect(tokenOf(base, "BTC")).toEqual({ symbol: "BTC", address: m.btc, name: "cbBTC", decimals: 8 });
    expect(tokenOf(arbitrum, "USDC")).toEqual({ symbol: "USDC", address: arb.usdc, name: "USDC", decimals: 6 });
    expect(tokenOf(arbitrum, "ETH")).toEqual({ symbol: "ETH", address: arb.weth, name: "WETH", decimals: 18 });
    expect(tokenOf(arbitrum, "BTC")).toEqual({ symbol: "BTC", address: arb.btc, name: "WBTC", decimals: 8 });
    expect(arb.btc).not.toBe(m.btc);
  });
});

describe("feeTransfer", () => {
  it("transfers exactly the fee in USDC to the recipient, and says which action it pays for", () => {
    const step = feeTransfer(base, "deposit", 1_250_000n, feeRecipient);
    expect(erc20(step)).toEqual({ functionName: "transfer", args: [feeRecipient, 1_250_000n] });
    expect(shown(step)).toEqual({
      kind: "fee_transfer",
      main: false,
      to: m.usdc,
      value: "0",
      summary: {
        contract: "USDC",
        function: "transfer",
        args: { to: feeRecipient, amount: "1250000" },
        amount: { token: `USDC (${m.usdc})`, units: "1250000", decimals: 6, display: "1.25 USDC", usdc: 1.25 },
        description: `Pay the 1.25 USDC service fee of this deposit to ${feeRecipient}`,
      },
    });
  });

  it("on Arbitrum it is Arbitrum's native USDC that moves", () => {
    const step = feeTransfer(arbitrum, "convert", 7n, feeRecipient);
    expect(step.to).toBe(arb.usdc);
    expect(step.summary.amount).toEqual({ token: `USDC (${arb.usdc})`, units: "7", decimals: 6, display: "0.000007 USDC", usdc: 0.000007 });
    expect(step.summary.description).toBe(`Pay the 0.000007 USDC service fee of this convert to ${feeRecipient}`);
  });
});

describe("approve", () => {
  it("approves a collateral token to a named spender, in the token's own decimals (no USDC figure)", () => {
    const spender = swapRouter02(m.chainId);
    const step = approve(base, tokenOf(base, "ETH"), spender, "Uniswap V3 SwapRouter02", 500_000_000_000_000_000n);
    expect(erc20(step)).toEqual({ functionName: "approve", args: [spender, 500_000_000_000_000_000n] });
    expect(shown(step)).toEqual({
      kind: "approval",
      main: false,
      to: m.weth,
      value: "0",
      summary: {
        contract: "WETH",
        function: "approve",
        args: { spender, amount: "500000000000000000" },
        amount: { token: `WETH (${m.weth})`, units: "500000000000000000", decimals: 18, display: "0.5 WETH" },
        description: `Allow the Uniswap V3 SwapRouter02 (${spender}) to take 0.5 WETH`,
      },
    });
    expect(step.summary.amount).not.toHaveProperty("usdc");
  });

  it("approves USDC to the Pool with its USDC figure", () => {
    const step = approve(base, tokenOf(base, "USDC"), m.pool, "Aave V3 Pool", 100_500_000n);
    expect(erc20(step)).toEqual({ functionName: "approve", args: [m.pool, 100_500_000n] });
    expect(step.to).toBe(m.usdc);
    expect(step.summary.contract).toBe("USDC");
    expect(step.summary.amount).toEqual({ token: `USDC (${m.usdc})`, units: "100500000", decimals: 6, display: "100.5 USDC", usdc: 100.5 });
    expect(step.summary.description).toBe(`Allow the Aave V3 Pool (${m.pool}) to take 100.5 USDC`);
  });

  it("an Arbitrum BTC approval is of WBTC, in 8 decimals", () => {
    const step = approve(arbitrum, tokenOf(arbitrum, "BTC"), arb.pool, "Aave V3 Pool", 1_500_000n);
    expect(step.to).toBe(arb.btc);
    expect(step.summary.contract).toBe("WBTC");
    expect(step.summary.description).toBe(`Allow the Aave V3 Pool (${arb.pool}) to take 0.015 WBTC`);
  });
});

describe("supply", () => {
  it("supplies USDC to the chain's Pool on behalf of the wallet (referral 0)", () => {
    const step = supply(base, tokenOf(base, "USDC"), 100_000_000n, true);
    expect(pool(step)).toEqual({ functionName: "supply", args: [m.usdc, 100_000_000n, wallet, 0] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: true,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "supply",
        args: { asset: m.usdc, amount: "100000000", onBehalfOf: wallet, referralCode: 0 },
        amount: { token: `USDC (${m.usdc})`, units: "100000000", decimals: 6, display: "100 USDC", usdc: 100 },
        description: `Supply 100 USDC to Aave V3 on Base on behalf of ${wallet}`,
      },
    });
  });

  it("supplies ETH or BTC as collateral, named as the chain's token", () => {
    const eth = supply(base, tokenOf(base, "ETH"), 10n ** 18n, false);
    expect(pool(eth)).toEqual({ functionName: "supply", args: [m.weth, 10n ** 18n, wallet, 0] });
    expect(eth.main).toBe(false);
    expect(eth.summary.description).toBe(`Supply 1 WETH as collateral to Aave V3 on Base on behalf of ${wallet}`);
    const wbtc = supply(arbitrum, tokenOf(arbitrum, "BTC"), 1_500_000n, true);
    expect(pool(wbtc)).toEqual({ functionName: "supply", args: [arb.btc, 1_500_000n, wallet, 0] });
    expect(wbtc.to).toBe(arb.pool);
    expect(wbtc.summary.amount).toEqual({ token: `WBTC (${arb.btc})`, units: "1500000", decimals: 8, display: "0.015 WBTC" });
    expect(wbtc.summary.description).toBe(`Supply 0.015 WBTC as collateral to Aave V3 on Arbitrum on behalf of ${wallet}`);
  });
});

describe("borrow", () => {
  it("borrows USDC at the variable rate (mode 2) for the wallet itself", () => {
    const step = borrow(base, 2_500_000_000n, true);
    expect(VARIABLE_RATE).toBe(2n);
    expect(pool(step)).toEqual({ functionName: "borrow", args: [m.usdc, 2_500_000_000n, 2n, 0, wallet] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: true,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "borrow",
        args: { asset: m.usdc, amount: "2500000000", interestRateMode: 2, referralCode: 0, onBehalfOf: wallet },
        amount: { token: `USDC (${m.usdc})`, units: "2500000000", decimals: 6, display: "2500 USDC", usdc: 2500 },
        description: `Borrow 2500 USDC at the variable rate from Aave V3 on Base against ${wallet}'s collateral`,
      },
    });
    expect(borrow(arbitrum, 1n, false)).toMatchObject({
      main: false,
      to: arb.pool,
      summary: { description: `Borrow 0.000001 USDC at the variable rate from Aave V3 on Arbitrum against ${wallet}'s collateral` },
    });
  });
});

describe("repay", () => {
  it("repays a bounded amount of the wallet's variable USDC debt", () => {
    const step = repay(base, 300_000_000n, true);
    expect(pool(step)).toEqual({ functionName: "repay", args: [m.usdc, 300_000_000n, 2n, wallet] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: true,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "repay",
        args: { asset: m.usdc, amount: "300000000", interestRateMode: 2, onBehalfOf: wallet },
        amount: { token: `USDC (${m.usdc})`, units: "300000000", decimals: 6, display: "300 USDC", usdc: 300 },
        description: `Repay 300 USDC of variable debt on Aave V3 on Base for ${wallet}`,
      },
    });
  });

  it("ALL is uint256 max on chain and reads as the whole debt, never as a 78-digit number", () => {
    expect(ALL).toBe(MAX);
    const step = repay(arbitrum, ALL, false);
    expect(pool(step)).toEqual({ functionName: "repay", args: [arb.usdc, MAX, 2n, wallet] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: false,
      to: arb.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "repay",
        args: { asset: arb.usdc, amount: "max", interestRateMode: 2, onBehalfOf: wallet },
        amount: { token: `USDC (${arb.usdc})`, units: "max", decimals: 6, display: "the whole USDC debt" },
        description: `Repay the whole USDC variable debt on Aave V3 on Arbitrum for ${wallet} (type(uint256).max: no dust of interest remains)`,
      },
    });
    // one unit under max is an amount like any other
    expect(repay(base, MAX - 1n, true).summary.args.amount).toBe((MAX - 1n).toString());
  });
});

describe("repayWithATokens", () => {
  it("repays a bounded amount of debt with the wallet's supplied USDC", () => {
    const step = repayWithATokens(base, 18_000_000n, true);
    expect(pool(step)).toEqual({ functionName: "repayWithATokens", args: [m.usdc, 18_000_000n, 2n] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: true,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "repayWithATokens",
        args: { asset: m.usdc, amount: "18000000", interestRateMode: 2 },
        amount: { token: `USDC (${m.usdc})`, units: "18000000", decimals: 6, display: "18 USDC", usdc: 18 },
        description: `Repay USDC debt on Aave V3 on Base for ${wallet} with 18 of its supplied USDC`,
      },
    });
  });

  it("ALL uses as much of the supplied USDC as the debt needs, and says so", () => {
    const step = repayWithATokens(base, ALL, false);
    expect(pool(step)).toEqual({ functionName: "repayWithATokens", args: [m.usdc, MAX, 2n] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: false,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "repayWithATokens",
        args: { asset: m.usdc, amount: "max", interestRateMode: 2 },
        amount: { token: `aUSDC of ${m.usdc}`, units: "max", decimals: 6, display: "all the supplied USDC the debt needs" },
        description: `Repay USDC debt on Aave V3 on Base for ${wallet} with its supplied USDC (as much as the debt needs)`,
      },
    });
  });
});

describe("withdraw", () => {
  it("withdraws the units of a token to the wallet itself", () => {
    const step = withdraw(base, tokenOf(base, "ETH"), 250_000_000_000_000_000n, true);
    expect(pool(step)).toEqual({ functionName: "withdraw", args: [m.weth, 250_000_000_000_000_000n, wallet] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: true,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "withdraw",
        args: { asset: m.weth, amount: "250000000000000000", to: wallet },
        amount: { token: `WETH (${m.weth})`, units: "250000000000000000", decimals: 18, display: "0.25 WETH" },
        description: `Withdraw 0.25 WETH supplied to Aave V3 on Base to ${wallet}`,
      },
    });
  });

  it("withdraws USDC with its USDC figure", () => {
    const step = withdraw(base, tokenOf(base, "USDC"), 12_500_000n, false);
    expect(pool(step)).toEqual({ functionName: "withdraw", args: [m.usdc, 12_500_000n, wallet] });
    expect(step.summary.amount).toEqual({ token: `USDC (${m.usdc})`, units: "12500000", decimals: 6, display: "12.5 USDC", usdc: 12.5 });
    expect(step.summary.description).toBe(`Withdraw 12.5 USDC supplied to Aave V3 on Base to ${wallet}`);
  });

  it("ALL withdraws the whole supply (interest included), read as all of the token", () => {
    const step = withdraw(base, tokenOf(base, "BTC"), ALL, false);
    expect(pool(step)).toEqual({ functionName: "withdraw", args: [m.btc, MAX, wallet] });
    expect(shown(step)).toEqual({
      kind: "pool_call",
      main: false,
      to: m.pool,
      value: "0",
      summary: {
        contract: "Aave V3 Pool",
        function: "withdraw",
        args: { asset: m.btc, amount: "max", to: wallet },
        amount: { token: `cbBTC (${m.btc})`, units: "max", decimals: 8, display: "all of the cbBTC" },
        description: `Withdraw all of the cbBTC supplied to Aave V3 on Base to ${wallet}`,
      },
    });
    const wbtc = withdraw(arbitrum, tokenOf(arbitrum, "BTC"), ALL, true);
    expect(pool(wbtc)).toEqual({ functionName: "withdraw", args: [arb.btc, MAX, wallet] });
    expect(wbtc.to).toBe(arb.pool);
    expect(wbtc.summary.description).toBe(`Withdraw all of the WBTC supplied to Aave V3 on Arbitrum to ${wallet}`);
  });
});

describe("swapExactIn", () => {
  it("sells exactly the units in the 0.05% pool through the chain's SwapRouter02, the output to the wallet, at least the bound", () => {
    const step = swapExactIn(base, tokenOf(base, "ETH"), tokenOf(base, "USDC"), 500_000_000_000_000_000n, 1_237_500_000n, "1% below the quote");
    expect(router(step)).toEqual({
      functionName: "exactInputSingle",
      args: [
        {
          tokenIn: m.weth,
          tokenOut: m.usdc,
          fee: 500,
          recipient: wallet,
          amountIn: 500_000_000_000_000_000n,
          amountOutMinimum: 1_237_500_000n,
          sqrtPriceLimitX96: 0n,
        },
      ],
    });
    expect(shown(step)).toEqual({
      kind: "swap",
      main: false,
      to: swapRouter02(8453),
      value: "0",
      summary: {
        contract: "Uniswap V3 SwapRouter02",
        function: "exactInputSingle",
        args: {
          tokenIn: m.weth,
          tokenOut: m.usdc,
          fee: 500,
          recipient: wallet,
          amountIn: "500000000000000000",
          amountOutMinimum: "1237500000",
          sqrtPriceLimitX96: "0",
        },
        amount: { token: `WETH (${m.weth})`, units: "500000000000000000", decimals: 18, display: "0.5 WETH" },
        description: "Swap 0.5 WETH for at least 1237.5 USDC (1% below the quote) in the 0.05% pool",
      },
    });
  });

  it("buying BTC with USDC on Arbitrum: Arbitrum's router, the bound in WBTC's 8 decimals, the amount in USDC", () => {
    const step = swapExactIn(arbitrum, tokenOf(arbitrum, "USDC"), tokenOf(arbitrum, "BTC"), 100_000_000n, 99_000n, "note");
    expect(step.to).toBe(swapRouter02(42161));
    expect(step.to).not.toBe(swapRouter02(8453));
    expect(router(step).args[0]).toMatchObject({ tokenIn: arb.usdc, tokenOut: arb.btc, amountIn: 100_000_000n, amountOutMinimum: 99_000n });
    expect(step.summary.amount).toEqual({ token: `USDC (${arb.usdc})`, units: "100000000", decimals: 6, display: "100 USDC", usdc: 100 });
    expect(step.summary.description).toBe("Swap 100 USDC for at least 0.00099 WBTC (note) in the 0.05% pool");
  });
});

describe("minOutOf", () => {
  it("is the quote less 1% by default, rounded down (never a bound above what 1% allows)", () => {
    expect(SWAP_SLIPPAGE_BPS).toBe(100n);
    expect(minOutOf(1_250_000_000n)).toBe(1_237_500_000n);
    expect(minOutOf(1_250_000_001n)).toBe(1_237_500_000n); // 1,237,500,000.99
    expect(minOutOf(101n)).toBe(99n); // 99.99
    expect(minOutOf(0n)).toBe(0n);
  });

  it("takes another slippage in basis points", () => {
    expect(minOutOf(1_000_000n, 150n)).toBe(985_000n);
    expect(minOutOf(1_000_000n, 0n)).toBe(1_000_000n);
    expect(minOutOf(999n, 1n)).toBe(998n); // 998.9001
  });
});
