/**
 * Deleverage from collateral: which collateral the protection engine sells,
 * how much, the minimum the module will accept for it, and whether it needs
 * Aave's flash liquidity to do it (the ProtectionModule's `deleverage`).
 *
 * - how much: the repayment that parks the position when the collateral falls
 *   with the debt (repaymentToPark, fromCollateral), valued at the oracle; at
 *   most the whole supply of the chosen collateral (then the act is partial);
 * - which: the collateral with the lowest liquidation threshold first (selling
 *   it raises the health factor most per dollar), then the larger supply;
 * - minimum out: what the module computes on chain, the oracle's value less
 *   maxSlippageBps (the same integer arithmetic, so the engine can check a
 *   quote against it before sending);
 * - flash: when withdrawing first would leave Aave's health factor under
 *   WITHDRAW_FIRST_MIN_HEALTH, USDC is flash-borrowed and repaid first, as
 *   much as the sale surely pays back with the premium.
 *
 * Pure and exact: token units, micro-USD (6 decimals) and Aave's base currency
 * (8 decimals); no floats.
 */
import type { AssetSymbol } from "./assets";
import { ASSETS } from "./assets";
import { repaymentToPark } from "./delegation";

/** the health factor (in hundredths) withdrawing first must keep, above Aave's own line of 1 */
export const WITHDRAW_FIRST_MIN_HEALTH_CENTIS = 101n;

export type CollateralAsset = Exclude<AssetSymbol, "USDC">;

export interface DeleverageInput {
  /** getUserAccountData: collateral and debt in base units (8 decimals USD), the weighted liquidation threshold */
  collateralBase: bigint;
  debtBase: bigint;
  liquidationThresholdBps: bigint;
  /** the exact USDC debt, USDC units */
  debtUsdc: bigint;
  /** the oracle's price of USDC, base units */
  usdcPriceBase: bigint;
  /** the Safe's supply of each collateral (token units), its oracle price (base units per whole unit) and liquidation threshold (0: not collateral) */
  collateral: Record<CollateralAsset, { supplied: bigint; priceBase: bigint; ltBps: bigint }>;
  parkTargetBps: bigint;
  maxSlippageBps: bigint;
  flashPremiumBps: bigint;
}

export interface DeleverageChoice {
  asset: CollateralAsset;
  /** token units to withdraw and sell */
  amount: bigint;
  /** whether selling `amount` reaches the park target (false: the supply of this collateral is not enough) */
  reachesPark: boolean;
}

export interface DeleverageCall {
  asset: CollateralAsset;
  amount: bigint;
  /** the oracle's value of `amount`, micro-USD */
  valueMicro: bigint;
  /** the least USDC the module accepts for it (oracle value less maxSlippageBps), USDC units */
  minOut: bigint;
  /** USDC flash-borrowed and repaid first (0: withdraw first) */
  flashAmount: bigint;
}

const unit = (asset: CollateralAsset) => 10n ** BigInt(ASSETS[asset].decimals);

/** the oracle's value of `amount` of `asset`, micro-USD (rounded down) */
export const valueMicro = (input: DeleverageInput, asset: CollateralAsset, amount: bigint): bigint =>
  (amount * input.collateral[asset].priceBase) / (100n * unit(asset));

/** the collateral to sell and how much, or null when nothing needs (or can be) sold */
export function chooseDeleverage(input: DeleverageInput): DeleverageChoice | null {
  const repay = repaymentToPark({
    collateralBase: input.collateralBase,
    debtBase: input.debtBase,
    usdcPriceBase: input.usdcPriceBase,
    parkTargetBps: input.parkTargetBps,
    fromCollateral: true,
  });
  // the repayment's value in micro-USD (0 at or under the park target)
  const targetMicro = (repay * input.usdcPriceBase) / 100_000_000n;
  const candidates = (Object.keys(input.collateral) as CollateralAsset[])
    .filter((a) => input.collateral[a].supplied > 0n && input.collateral[a].ltBps > 0n && input.collateral[a].priceBase > 0n)
    .sort((a, b) => {
      const byLt = input.collateral[a].ltBps - input.collateral[b].ltBps;
      if (byLt !== 0n) return byLt < 0n ? -1 : 1;
      const byValue = valueMicro(input, b, input.collateral[b].supplied) - valueMicro(input, a, input.collateral[a].supplied);
      return byValue === 0n ? 0 : byValue < 0n ? -1 : 1;
    });
  const asset = candidates[0];
  if (!asset) return null;
  const c = input.collateral[asset];
  const wanted = (targetMicro * 100n * unit(asset)) / c.priceBase;
  if (wanted <= 0n) return null;
  return wanted > c.supplied ? { asset, amount: c.supplied, reachesPark: false } : { asset, amount: wanted, reachesPark: true };
}

/**
 * The module call for selling `amount` of `asset`: its minimum out (as the
 * module computes it) and the flash loan it needs, or null when even the
 * largest flash loan the sale can repay would not let Aave release `amount`.
 */
export function deleverageCall(input: DeleverageInput, asset: CollateralAsset, amount: bigint): DeleverageCall | null {
  const c = input.collateral[asset];
  const value = valueMicro(input, asset, amount);
  if (input.usdcPriceBase <= 0n) return null;
  // as the module computes it: amount x price x 10^6 / (usdcPrice x 10^decimals), less the slippage bound
  const atOracle = (amount * c.priceBase * 1_000_000n) / (input.usdcPriceBase * unit(asset));
  const minOut = (atOracle * (10_000n - input.maxSlippageBps)) / 10_000n;
  if (minOut <= 0n) return null;
  // Aave's health factor after withdrawing `amount` with `repaidUsdc` repaid first, against WITHDRAW_FIRST_MIN_HEALTH
  const lhs = input.collateralBase * input.liquidationThresholdBps - value * 100n * c.ltBps;
  const holds = (repaidUsdc: bigint) => {
    const debtAfter = input.debtBase - (repaidUsdc * input.usdcPriceBase) / 1_000_000n;
    return debtAfter <= 0n || lhs * 100n >= debtAfter * 10_000n * WITHDRAW_FIRST_MIN_HEALTH_CENTIS;
  };
  if (holds(0n)) return { asset, amount, valueMicro: value, minOut, flashAmount: 0n };
  // the most the sale surely repays with the premium: F + F x premium <= minOut
  const most = (minOut * 10_000n) / (10_000n + input.flashPremiumBps) - 1n;
  const flashAmount = most < input.debtUsdc ? most : input.debtUsdc;
  if (flashAmount <= 0n || !holds(flashAmount)) return null;
  return { asset, amount, valueMicro: value, minOut, flashAmount };
}
