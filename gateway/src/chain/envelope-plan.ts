/**
 * The transactions behind an action in wallet mode: real ABI-encoded calls to
 * the real Aave V3 Pool of the treasury's chain (addresses from the Aave
 * address book), the approvals they need, the service fee transfer, and for
 * convert a Uniswap V3 swap. Each step carries a decoded summary a signer can
 * check. Pure: no I/O.
 */
import { encodeFunctionData, getAddress } from "viem";
import { AAVE_POOL_ABI } from "../../../contracts-abi/aave-pool";
import { AAVE_MARKETS, type AaveMarket } from "../../../contracts-abi/chains";
import { ERC20_ABI } from "../../../contracts-abi/erc20";
import { CONVERT_POOL_FEE, SWAP_ROUTER_02_ABI, swapRouter02 } from "../../../contracts-abi/uniswap";
import { ASSETS, sandboxUnitsFor } from "../domain/assets";
import type { TreasuryAction } from "../domain/fees";
import { formatDecimal, usdcToNumber, type Micro } from "../domain/money";

export type StepKind = "fee_transfer" | "approval" | "swap" | "pool_call";

export interface PlannedStep {
  kind: StepKind;
  /** the step that is the action's own Aave Pool call (its tx_id is the envelope's) */
  main: boolean;
  to: `0x${string}`;
  data: `0x${string}`;
  value: "0";
  summary: StepSummary;
}

export interface StepSummary {
  contract: string;
  function: string;
  args: Record<string, string | number>;
  amount: { token: string; units: string; decimals: number; display: string; usdc?: number };
  description: string;
}

export const VARIABLE_RATE = 2n;
/** the swap accepts at most this slippage from the quote, basis points */
export const CONVERT_SLIPPAGE_BPS = 100n;

export interface PlanInput {
  action: TreasuryAction;
  chain: "base" | "arbitrum";
  wallet: `0x${string}`;
  amountMicro: Micro;
  feeMicro: Micro;
  feeRecipient: `0x${string}`;
  target?: "btc" | "eth";
}

const usdcAmount = (m: AaveMarket, micro: Micro) => ({
  token: `USDC (${m.usdc})`,
  units: micro.toString(),
  decimals: 6,
  display: `${formatDecimal(micro, 6)} USDC`,
  usdc: usdcToNumber(micro),
});

export function planSteps(input: PlanInput): PlannedStep[] {
  // a zero fee (tiny amounts) needs no transfer
  return planAllSteps(input).filter((s) => s.kind !== "fee_transfer" || input.feeMicro > 0n);
}

function planAllSteps(input: PlanInput): PlannedStep[] {
  const m = AAVE_MARKETS[input.chain];
  const wallet = getAddress(input.wallet);
  const chainName = input.chain === "base" ? "Base" : "Arbitrum";
  const net = input.amountMicro - input.feeMicro;

  const feeTransfer = (): PlannedStep => ({
    kind: "fee_transfer",
    main: false,
    to: m.usdc,
    data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [input.feeRecipient, input.feeMicro] }),
    value: "0",
    summary: {
      contract: "USDC",
      function: "transfer",
      args: { to: input.feeRecipient, amount: input.feeMicro.toString() },
      amount: usdcAmount(m, input.feeMicro),
      description: `Pay the ${formatDecimal(input.feeMicro, 6)} USDC service fee of this ${input.action} to ${input.feeRecipient}`,
    },
  });

  const approveUsdc = (spender: `0x${string}`, spenderName: string, micro: Micro): PlannedStep => ({
    kind: "approval",
    main: false,
    to: m.usdc,
    data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [spender, micro] }),
    value: "0",
    summary: {
      contract: "USDC",
      function: "approve",
      args: { spender, amount: micro.toString() },
      amount: usdcAmount(m, micro),
      description: `Allow the ${spenderName} (${spender}) to take ${formatDecimal(micro, 6)} USDC`,
    },
  });

  switch (input.action) {
    case "deposit":
      return [
        feeTransfer(),
        approveUsdc(m.pool, "Aave V3 Pool", net),
        {
          kind: "pool_call",
          main: true,
          to: m.pool,
          data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [m.usdc, net, wallet, 0] }),
          value: "0",
          summary: {
            contract: "Aave V3 Pool",
            function: "supply",
            args: { asset: m.usdc, amount: net.toString(), onBehalfOf: wallet, referralCode: 0 },
            amount: usdcAmount(m, net),
            description: `Supply ${formatDecimal(net, 6)} USDC to Aave V3 on ${chainName} on behalf of ${wallet}`,
          },
        },
      ];
    case "borrow":
      return [
        {
          kind: "pool_call",
          main: true,
          to: m.pool,
          data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [m.usdc, input.amountMicro, VARIABLE_RATE, 0, wallet] }),
          value: "0",
          summary: {
            contract: "Aave V3 Pool",
            function: "borrow",
            args: { asset: m.usdc, amount: input.amountMicro.toString(), interestRateMode: 2, referralCode: 0, onBehalfOf: wallet },
            amount: usdcAmount(m, input.amountMicro),
            description: `Borrow ${formatDecimal(input.amountMicro, 6)} USDC at the variable rate from Aave V3 on ${chainName} against ${wallet}'s collateral`,
          },
        },
        feeTransfer(),
      ];
    case "repay":
      return [
        approveUsdc(m.pool, "Aave V3 Pool", input.amountMicro),
        {
          kind: "pool_call",
          main: true,
          to: m.pool,
          data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [m.usdc, input.amountMicro, VARIABLE_RATE, wallet] }),
          value: "0",
          summary: {
            contract: "Aave V3 Pool",
            function: "repay",
            args: { asset: m.usdc, amount: input.amountMicro.toString(), interestRateMode: 2, onBehalfOf: wallet },
            amount: usdcAmount(m, input.amountMicro),
            description: `Repay ${formatDecimal(input.amountMicro, 6)} USDC of variable debt on Aave V3 on ${chainName} for ${wallet}`,
          },
        },
      ];
    case "convert": {
      const symbol = input.target === "btc" ? "BTC" : "ETH";
      const token = input.target === "btc" ? m.btc : m.weth;
      const tokenName = input.target === "btc" ? (input.chain === "base" ? "cbBTC" : "WBTC") : "WETH";
      const decimals = ASSETS[symbol].decimals;
      const quoted = sandboxUnitsFor(symbol, net);
      const minOut = (quoted * (10_000n - CONVERT_SLIPPAGE_BPS)) / 10_000n;
      const router = swapRouter02(m.chainId);
      const tokenAmount = { token: `${tokenName} (${token})`, units: minOut.toString(), decimals, display: `${formatDecimal(minOut, decimals)} ${tokenName}` };
      return [
        feeTransfer(),
        approveUsdc(router, "Uniswap V3 SwapRouter02", net),
        {
          kind: "swap",
          main: false,
          to: router,
          data: encodeFunctionData({
            abi: SWAP_ROUTER_02_ABI,
            functionName: "exactInputSingle",
            args: [{ tokenIn: m.usdc, tokenOut: token, fee: CONVERT_POOL_FEE, recipient: wallet, amountIn: net, amountOutMinimum: minOut, sqrtPriceLimitX96: 0n }],
          }),
          value: "0",
          summary: {
            contract: "Uniswap V3 SwapRouter02",
            function: "exactInputSingle",
            args: { tokenIn: m.usdc, tokenOut: token, fee: CONVERT_POOL_FEE, recipient: wallet, amountIn: net.toString(), amountOutMinimum: minOut.toString(), sqrtPriceLimitX96: "0" },
            amount: usdcAmount(m, net),
            description: `Swap ${formatDecimal(net, 6)} USDC for at least ${formatDecimal(minOut, decimals)} ${tokenName} (1% below the quote) in the 0.05% pool`,
          },
        },
        {
          kind: "approval",
          main: false,
          to: token,
          data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, minOut] }),
          value: "0",
          summary: {
            contract: tokenName,
            function: "approve",
            args: { spender: m.pool, amount: minOut.toString() },
            amount: tokenAmount,
            description: `Allow the Aave V3 Pool (${m.pool}) to take ${formatDecimal(minOut, decimals)} ${tokenName}`,
          },
        },
        {
          kind: "pool_call",
          main: true,
          to: m.pool,
          data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [token, minOut, wallet, 0] }),
          value: "0",
          summary: {
            contract: "Aave V3 Pool",
            function: "supply",
            args: { asset: token, amount: minOut.toString(), onBehalfOf: wallet, referralCode: 0 },
            amount: tokenAmount,
            description: `Supply ${formatDecimal(minOut, decimals)} ${tokenName} as collateral to Aave V3 on ${chainName} on behalf of ${wallet}`,
          },
        },
      ];
    }
  }
}
