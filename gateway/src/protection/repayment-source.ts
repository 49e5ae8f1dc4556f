/**
 * Where a protected position's repayment comes from: idle USDC, supplied USDC, or a sale of collateral sized
 * against the pool (the domain's choice, packages/core/src/domain/deleverage.ts: which collateral, how much, with or without a flash
 * loan, then fitted to the pool's QuoterV2 quote so the module's bound, its minimum out under the oracle, holds when
 * the transaction lands).
 */
import { encodeFunctionData } from "viem";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { CONVERT_POOL_FEE } from "@treasury/core/contracts/uniswap";
import { quoterV2 } from "@treasury/core/contracts/uniswap-quoter";
import type { ChainGateway, ChainPosition } from "../chain/chain-gateway";
import { oraclePrices, quoteExactIn } from "@treasury/core/chain/market-reads";
import { ASSETS } from "@treasury/core/domain/assets";
import { chooseDeleverage, deleverageCall, type DeleverageInput } from "@treasury/core/domain/deleverage";
import { repaymentToPark } from "@treasury/core/domain/delegation";
import { formatDecimal } from "@treasury/core/domain/money";
import type { DelegationRecord } from "../store/delegation-store";
import type { ProtectionClaim } from "../store/protection-claim-store";
import { DELEVERAGE_GAS_LIMIT, EXECUTE_GAS_LIMIT, type Call } from "./module-calls";

/** how far above the module's minimum out a quote must be to send (the pool moves between the quote and the block) */
const QUOTE_MARGIN_BPS = 30n;

/** what to sell and what the module must get for it */
export interface Sale {
  token: `0x${string}`;
  amount: bigint;
  flashAmount: bigint;
  minOut: bigint;
  partial: boolean;
  note: string;
}

/**
 * The sale of collateral that parks the position (packages/core/src/domain/deleverage.ts), sized against the pool: a quote under
 * the module's minimum out (plus a margin) shrinks the sale, which is then partial; a quote above the oracle's
 * value shrinks it too (it would repay past the park target). A string says why nothing can be sold.
 */
export async function saleToPark(
  gateway: ChainGateway,
  d: Pick<DelegationRecord, "module" | "safe">,
  chain: TreasuryChain,
  position: ChainPosition,
  usdcPriceBase: bigint,
  park: bigint,
): Promise<Sale | string> {
  const m = AAVE_MARKETS[chain];
  const client = gateway.client(chain);
  let maxSlippageBps: bigint;
  try {
    maxSlippageBps = await client.readContract({ address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "maxSlippageBps" });
  } catch {
    return "the attached module cannot deleverage from collateral (attach the current ProtectionModule)";
  }
  const [snapshot, prices, flashPremiumBps] = await Promise.all([
    gateway.marketSnapshot(chain, d.safe),
    oraclePrices(client, m.oracle, [m.weth, m.btc]),
    client.readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "FLASHLOAN_PREMIUM_TOTAL" }).then(BigInt),
  ]);
  const input: DeleverageInput = {
    collateralBase: position.collateralBase,
    debtBase: position.debtBase,
    liquidationThresholdBps: BigInt(position.liquidationThresholdBps),
    debtUsdc: snapshot.debt,
    usdcPriceBase,
    collateral: {
      ETH: { supplied: snapshot.supplied.ETH, priceBase: prices[0]!, ltBps: snapshot.lt.ETH },
      BTC: { supplied: snapshot.supplied.BTC, priceBase: prices[1]!, ltBps: snapshot.lt.BTC },
    },
    parkTargetBps: park,
    maxSlippageBps,
    flashPremiumBps,
  };
  const choice = chooseDeleverage(input);
  if (!choice) return "no collateral to sell";
  const token = choice.asset === "ETH" ? m.weth : m.btc;
  let quoter: `0x${string}`;
  try {
    quoter = quoterV2(m.chainId);
  } catch {
    return `no Uniswap QuoterV2 is known on ${chain}: a sale cannot be sized against its pool`;
  }
  let amount = choice.amount;
  let fitted = false;
  for (let round = 0; round < 12 && amount > 0n; round++) {
    const call = deleverageCall(input, choice.asset, amount);
    if (!call) {
      amount = (amount * 3n) / 4n;
      continue;
    }
    const quote = await quoteExactIn(client, quoter, token, m.usdc, CONVERT_POOL_FEE, amount);
    const atOracle = (call.minOut * 10_000n) / (10_000n - maxSlippageBps);
    if (choice.reachesPark && !fitted) {
      // the repayment is k x W for W of collateral sold, k = (quote - flash premium) / oracle value: the park line
      // is W = (D - park x C) / (k - park), not (D - park x C) / (1 - park), so the sale scales by (1 - park) / (k - park).
      // Larger (k < 1: the pool's fee and impact) it only lowers k further, the safe side; smaller (k > 1: a pool
      // above the oracle) it is kept 1% under, as a smaller sale fills at a better price
      const net = quote - (call.flashAmount * flashPremiumBps) / 10_000n;
      let fit = (amount * (10_000n - park) * atOracle) / (net * 10_000n - park * atOracle);
      if (fit < amount) fit = (fit * 99n) / 100n;
      amount = fit < input.collateral[choice.asset].supplied ? fit : input.collateral[choice.asset].supplied;
      fitted = true;
      continue;
    }
    if (quote * 10_000n < call.minOut * (10_000n + QUOTE_MARGIN_BPS)) {
      amount = (amount * 3n) / 4n;
      continue;
    }
    const partial = !choice.reachesPark || amount < choice.amount;
    const what = `sell ${formatDecimal(amount, ASSETS[choice.asset].decimals)} ${choice.asset} (quoted ${formatDecimal(quote, 6)} USDC, at least ${formatDecimal(call.minOut, 6)}${call.flashAmount > 0n ? `; ${formatDecimal(call.flashAmount, 6)} USDC flash-borrowed and repaid first` : ""})`;
    const note = partial
      ? `${what}; partial: ${!choice.reachesPark ? `the Safe's ${choice.asset} is short of the park target` : `the pool's depth within the ${maxSlippageBps} bps bound caps one act at this size`}, the next act continues`
      : what;
    return { token, amount, flashAmount: call.flashAmount, minOut: call.minOut, partial, note };
  }
  return `no sale of ${choice.asset} fits the module's bound (${maxSlippageBps} bps under the oracle) at the pool's price`;
}

/** what repays the debt down to the park target, and the module calls that do it */
export interface RepaymentSource {
  calls: Call[];
  repay: bigint;
  about: NonNullable<ProtectionClaim["plan"]>;
}

/**
 * The repayment that parks the position, from the cheapest source that covers it: the Safe's idle USDC (no swap,
 * no premium), then its supplied USDC (repayWithATokens), then a sale of collateral. A string says why none can.
 */
export async function repaymentSource(
  gateway: ChainGateway,
  d: Pick<DelegationRecord, "module" | "safe">,
  chain: TreasuryChain,
  position: ChainPosition,
  usdcPrice: bigint,
  park: bigint,
): Promise<RepaymentSource | string> {
  const m = AAVE_MARKETS[chain];
  const base = { collateralBase: position.collateralBase, debtBase: position.debtBase, usdcPriceBase: usdcPrice, parkTargetBps: park };
  const fromWallet = repaymentToPark({ ...base, fromCollateral: false });
  const fromCollateral = repaymentToPark({ ...base, fromCollateral: true });
  let calls: Call[];
  let repay: bigint;
  let about: RepaymentSource["about"];
  // idle USDC first (the cheapest: no swap, no premium), then supplied USDC, then collateral
  if (fromWallet > 0n && position.holdings.walletUsdc >= fromWallet) {
    repay = fromWallet;
    calls = [
      {
        kind: "approve",
        fn: "execute",
        args: [m.usdc, encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, repay] })],
        gas: EXECUTE_GAS_LIMIT,
      },
      {
        kind: "repay",
        fn: "execute",
        args: [m.pool, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [m.usdc, repay, 2n, d.safe] })],
        gas: EXECUTE_GAS_LIMIT,
      },
    ];
    about = { source: "usdc", partial: false, note: `repaid from the Safe's idle USDC` };
  } else if (fromCollateral > 0n && position.holdings.aUsdc >= fromCollateral) {
    repay = fromCollateral;
    calls = [
      {
        kind: "repay",
        fn: "execute",
        args: [m.pool, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [m.usdc, repay, 2n] })],
        gas: EXECUTE_GAS_LIMIT,
      },
    ];
    about = { source: "ausdc", partial: false, note: `repaid from the Safe's supplied USDC (repayWithATokens)` };
  } else {
    const sale = await saleToPark(gateway, d, chain, position, usdcPrice, park);
    if (typeof sale === "string")
      return `no repayment source: the Safe holds ${position.holdings.walletUsdc} USDC and ${position.holdings.aUsdc} aUSDC, ${fromWallet} needed; ${sale}`;
    repay = sale.minOut;
    calls = [{ kind: "deleverage", fn: "deleverage", args: [sale.token, sale.amount, sale.flashAmount], gas: DELEVERAGE_GAS_LIMIT }];
    about = { source: "collateral", partial: sale.partial, note: sale.note };
  }
  return { calls, repay, about };
}
