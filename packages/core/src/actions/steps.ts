/**
 * The calls an action's envelope is made of, one builder per call: real
 * ABI-encoded calls to the real Aave V3 Pool of the treasury's chain
 * (addresses from the Aave address book), ERC-20 transfers and approvals, and
 * Uniswap V3 swaps through SwapRouter02. Each step carries a decoded summary a
 * signer can read (the signer agent decodes the calldata itself and never
 * trusts the summary). Pure: no I/O. The action declarations (actions/*.ts)
 * put these in order; the same list is a wallet's envelope, a Safe's batch and
 * the sandbox's impersonated run.
 */
import { encodeFunctionData, getAddress, maxUint256 } from "viem";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { CHAINS, type AaveMarket, type TreasuryChain } from "../contracts/chains";
import { ERC20_ABI } from "../contracts/erc20";
import { CONVERT_POOL_FEE, SWAP_ROUTER_02_ABI, swapRouter02 } from "../contracts/uniswap";
import { ASSETS, type AssetSymbol } from "../domain/assets";
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
/** a swap accepts at most this slippage from its quote, basis points */
export const SWAP_SLIPPAGE_BPS = 100n;
/** Aave's "all of it" (repay the whole debt, withdraw the whole supply): type(uint256).max */
export const ALL = maxUint256;

/** the tokens of one market as the steps name them */
export interface MarketToken {
  symbol: AssetSymbol;
  address: `0x${string}`;
  name: string;
  decimals: number;
}

/** what the steps of one envelope share: the market, the wallet, how the chain is called */
export interface StepContext {
  chain: TreasuryChain;
  market: AaveMarket;
  chainName: string;
  btcSymbol: string;
  wallet: `0x${string}`;
}

export function stepContext(chain: TreasuryChain, wallet: `0x${string}`): StepContext {
  const c = CHAINS[chain];
  return { chain, market: c.market, chainName: c.displayName, btcSymbol: c.btcSymbol, wallet: getAddress(wallet) };
}

/** the market's token for an asset (USDC, ETH as WETH, BTC as cbBTC on Base or WBTC on Arbitrum) */
export function tokenOf(c: StepContext, symbol: AssetSymbol): MarketToken {
  const m = c.market;
  if (symbol === "USDC") return { symbol, address: m.usdc, name: "USDC", decimals: 6 };
  if (symbol === "ETH") return { symbol, address: m.weth, name: "WETH", decimals: ASSETS.ETH.decimals };
  return { symbol, address: m.btc, name: c.btcSymbol, decimals: ASSETS.BTC.decimals };
}

const tokenAmount = (t: MarketToken, units: bigint) =>
  t.symbol === "USDC"
    ? { token: `USDC (${t.address})`, units: units.toString(), decimals: 6, display: `${formatDecimal(units, 6)} USDC`, usdc: usdcToNumber(units) }
    : { token: `${t.name} (${t.address})`, units: units.toString(), decimals: t.decimals, display: `${formatDecimal(units, t.decimals)} ${t.name}` };

/** "all" for Aave's max, else the amount in the token's decimals */
const shown = (t: MarketToken, units: bigint) => (units === ALL ? `all of the ${t.name}` : `${formatDecimal(units, t.decimals)} ${t.name}`);

export function feeTransfer(c: StepContext, action: string, feeMicro: Micro, recipient: `0x${string}`): PlannedStep {
  const usdc = tokenOf(c, "USDC");
  return {
    kind: "fee_transfer",
    main: false,
    to: usdc.address,
    data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [recipient, feeMicro] }),
    value: "0",
    summary: {
      contract: "USDC",
      function: "transfer",
      args: { to: recipient, amount: feeMicro.toString() },
      amount: tokenAmount(usdc, feeMicro),
      description: `Pay the ${formatDecimal(feeMicro, 6)} USDC service fee of this ${action} to ${recipient}`,
    },
  };
}

export function approve(c: StepContext, token: MarketToken, spender: `0x${string}`, spenderName: string, units: bigint): PlannedStep {
  return {
    kind: "approval",
    main: false,
    to: token.address,
    data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [spender, units] }),
    value: "0",
    summary: {
      contract: token.name,
      function: "approve",
      args: { spender, amount: units.toString() },
      amount: tokenAmount(token, units),
      description: `Allow the ${spenderName} (${spender}) to take ${formatDecimal(units, token.decimals)} ${token.name}`,
    },
  };
}

export const POOL_NAME = "Aave V3 Pool";
export const ROUTER_NAME = "Uniswap V3 SwapRouter02";

export function supply(c: StepContext, token: MarketToken, units: bigint, main: boolean): PlannedStep {
  const { market: m, wallet } = c;
  return {
    kind: "pool_call",
    main,
    to: m.pool,
    data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [token.address, units, wallet, 0] }),
    value: "0",
    summary: {
      contract: POOL_NAME,
      function: "supply",
      args: { asset: token.address, amount: units.toString(), onBehalfOf: wallet, referralCode: 0 },
      amount: tokenAmount(token, units),
      description:
        token.symbol === "USDC"
          ? `Supply ${formatDecimal(units, 6)} USDC to Aave V3 on ${c.chainName} on behalf of ${wallet}`
          : `Supply ${formatDecimal(units, token.decimals)} ${token.name} as collateral to Aave V3 on ${c.chainName} on behalf of ${wallet}`,
    },
  };
}

export function borrow(c: StepContext, amountMicro: Micro, main: boolean): PlannedStep {
  const { market: m, wallet } = c;
  return {
    kind: "pool_call",
    main,
    to: m.pool,
    data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [m.usdc, amountMicro, VARIABLE_RATE, 0, wallet] }),
    value: "0",
    summary: {
      contract: POOL_NAME,
      function: "borrow",
      args: { asset: m.usdc, amount: amountMicro.toString(), interestRateMode: 2, referralCode: 0, onBehalfOf: wallet },
      amount: tokenAmount(tokenOf(c, "USDC"), amountMicro),
      description: `Borrow ${formatDecimal(amountMicro, 6)} USDC at the variable rate from Aave V3 on ${c.chainName} against ${wallet}'s collateral`,
    },
  };
}

/** repay USDC debt of the wallet; `ALL` repays the whole debt, whatever interest accrued (Aave: only for the borrower itself) */
export function repay(c: StepContext, units: bigint, main: boolean): PlannedStep {
  const { market: m, wallet } = c;
  const usdc = tokenOf(c, "USDC");
  return {
    kind: "pool_call",
    main,
    to: m.pool,
    data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [m.usdc, units, VARIABLE_RATE, wallet] }),
    value: "0",
    summary: {
      contract: POOL_NAME,
      function: "repay",
      args: { asset: m.usdc, amount: units === ALL ? "max" : units.toString(), interestRateMode: 2, onBehalfOf: wallet },
      amount: units === ALL ? { token: `USDC (${m.usdc})`, units: "max", decimals: 6, display: "the whole USDC debt" } : tokenAmount(usdc, units),
      description:
        units === ALL
          ? `Repay the whole USDC variable debt on Aave V3 on ${c.chainName} for ${wallet} (type(uint256).max: no dust of interest remains)`
          : `Repay ${formatDecimal(units, 6)} USDC of variable debt on Aave V3 on ${c.chainName} for ${wallet}`,
    },
  };
}

/** repay USDC debt with the wallet's own supplied USDC (aUSDC); `ALL` uses as much as there is */
export function repayWithATokens(c: StepContext, units: bigint, main: boolean): PlannedStep {
  const { market: m, wallet } = c;
  return {
    kind: "pool_call",
    main,
    to: m.pool,
    data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [m.usdc, units, VARIABLE_RATE] }),
    value: "0",
    summary: {
      contract: POOL_NAME,
      function: "repayWithATokens",
      args: { asset: m.usdc, amount: units === ALL ? "max" : units.toString(), interestRateMode: 2 },
      amount:
        units === ALL
          ? { token: `aUSDC of ${m.usdc}`, units: "max", decimals: 6, display: "all the supplied USDC the debt needs" }
          : tokenAmount(tokenOf(c, "USDC"), units),
      description: `Repay USDC debt on Aave V3 on ${c.chainName} for ${wallet} with ${units === ALL ? "its supplied USDC (as much as the debt needs)" : `${formatDecimal(units, 6)} of its supplied USDC`}`,
    },
  };
}

/** withdraw from Aave to the wallet itself (never to another address); `ALL` withdraws the whole supply, interest included */
export function withdraw(c: StepContext, token: MarketToken, units: bigint, main: boolean): PlannedStep {
  const { market: m, wallet } = c;
  return {
    kind: "pool_call",
    main,
    to: m.pool,
    data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [token.address, units, wallet] }),
    value: "0",
    summary: {
      contract: POOL_NAME,
      function: "withdraw",
      args: { asset: token.address, amount: units === ALL ? "max" : units.toString(), to: wallet },
      amount:
        units === ALL
          ? { token: `${token.name} (${token.address})`, units: "max", decimals: token.decimals, display: `all of the ${token.name}` }
          : tokenAmount(token, units),
      description: `Withdraw ${shown(token, units)} supplied to Aave V3 on ${c.chainName} to ${wallet}`,
    },
  };
}

/** sell exactly `amountIn` of one token for at least `minOut` of another in the 0.05% pool; below the bound the swap reverts */
export function swapExactIn(c: StepContext, tokenIn: MarketToken, tokenOut: MarketToken, amountIn: bigint, minOut: bigint, note: string): PlannedStep {
  const { market: m, wallet } = c;
  const router = swapRouter02(m.chainId);
  return {
    kind: "swap",
    main: false,
    to: router,
    data: encodeFunctionData({
      abi: SWAP_ROUTER_02_ABI,
      functionName: "exactInputSingle",
      args: [
        {
          tokenIn: tokenIn.address,
          tokenOut: tokenOut.address,
          fee: CONVERT_POOL_FEE,
          recipient: wallet,
          amountIn,
          amountOutMinimum: minOut,
          sqrtPriceLimitX96: 0n,
        },
      ],
    }),
    value: "0",
    summary: {
      contract: ROUTER_NAME,
      function: "exactInputSingle",
      args: {
        tokenIn: tokenIn.address,
        tokenOut: tokenOut.address,
        fee: CONVERT_POOL_FEE,
        recipient: wallet,
        amountIn: amountIn.toString(),
        amountOutMinimum: minOut.toString(),
        sqrtPriceLimitX96: "0",
      },
      amount: tokenAmount(tokenIn, amountIn),
      description: `Swap ${formatDecimal(amountIn, tokenIn.decimals)} ${tokenIn.name} for at least ${formatDecimal(minOut, tokenOut.decimals)} ${tokenOut.name} (${note}) in the 0.05% pool`,
    },
  };
}

/** the least a swap may return: the quote less the slippage bound, rounded down */
export const minOutOf = (quoted: bigint, slippageBps = SWAP_SLIPPAGE_BPS): bigint => (quoted * (10_000n - slippageBps)) / 10_000n;
