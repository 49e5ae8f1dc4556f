/**
 * Holdings of a sandbox treasury and the position they make, as Aave holds
 * them on a chain: BTC, ETH and supplied USDC are collateral (BTC and ETH
 * valued at the fixed sandbox prices); idle USDC is wallet balance, not
 * collateral; debt is USDC.
 */
import { ASSETS, REFERENCE_LIQUIDATION_THRESHOLD_BPS, sandboxValueMicro } from "./assets";
import { formatDecimal, usdcToNumber, type Micro } from "./money";
import { healthScore, ltvPct, type Position } from "./position";

export interface Holdings {
  /** cbBTC base units (satoshi, 8 decimals) */
  btcUnits: bigint;
  /** WETH base units (wei, 18 decimals) */
  ethUnits: bigint;
  /** idle USDC in the wallet, micro-USDC */
  usdcMicro: Micro;
  /** USDC supplied to Aave (a deposit's net amount: aUSDC on a chain), micro-USDC; absent: none */
  suppliedUsdcMicro?: Micro;
  /** outstanding USDC debt, micro-USDC */
  debtMicro: Micro;
}

export const EMPTY_HOLDINGS: Holdings = { btcUnits: 0n, ethUnits: 0n, usdcMicro: 0n, debtMicro: 0n };

/** The public demo portfolio: 0.5 BTC + 10 ETH ($60,000), 5,000 USDC idle, 24,000 USDC borrowed (LTV 40%). */
export const DEMO_HOLDINGS: Holdings = {
  btcUnits: 50_000_000n,
  ethUnits: 10n * 10n ** 18n,
  usdcMicro: 5_000_000_000n,
  debtMicro: 24_000_000_000n,
};

export function positionOf(h: Holdings): Position {
  const btc = sandboxValueMicro("BTC", h.btcUnits);
  const eth = sandboxValueMicro("ETH", h.ethUnits);
  const usdc = h.suppliedUsdcMicro ?? 0n;
  const collateral = btc + eth + usdc;
  const lt =
    collateral === 0n
      ? REFERENCE_LIQUIDATION_THRESHOLD_BPS
      : Number(
          (btc * BigInt(ASSETS.BTC.liquidationThresholdBps) +
            eth * BigInt(ASSETS.ETH.liquidationThresholdBps) +
            usdc * BigInt(ASSETS.USDC.liquidationThresholdBps)) /
            collateral,
        );
  return { collateralMicro: collateral, debtMicro: h.debtMicro, liquidationThresholdBps: lt };
}

/** JSON view of holdings and the figures derived from them. */
export function portfolioFigures(h: Holdings) {
  const p = positionOf(h);
  return {
    holdings: {
      btc: Number(formatDecimal(h.btcUnits, ASSETS.BTC.decimals)),
      eth: Number(formatDecimal(h.ethUnits, ASSETS.ETH.decimals)),
      usdc: usdcToNumber(h.usdcMicro),
      usdc_supplied: usdcToNumber(h.suppliedUsdcMicro ?? 0n),
    },
    collateral_value_usd: usdcToNumber(p.collateralMicro),
    total_value_usd: usdcToNumber(p.collateralMicro + h.usdcMicro),
    borrowed_usd: usdcToNumber(h.debtMicro),
    ltv: ltvPct(p),
    health_score: healthScore(p),
    liquidation_threshold_pct: p.liquidationThresholdBps / 100,
  };
}
