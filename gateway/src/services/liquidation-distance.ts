/** The liquidation-distance document (spec 2.14), shared by REST and MCP. */
import { REFERENCE_LIQUIDATION_THRESHOLD_BPS } from "@treasury/core/domain/assets";
import { priceDropToLiquidationPct } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";

export function liquidationDistanceDocument(ltv: number) {
  const threshold = REFERENCE_LIQUIDATION_THRESHOLD_BPS;
  return {
    object: "liquidation_distance" as const,
    ltv,
    price_drop_to_liquidation_pct: priceDropToLiquidationPct(ltv, threshold),
    service_recommended_ceiling_ltv: PRESETS.balanced.ceiling,
    liquidation_threshold_pct: threshold / 100,
    formula: "price_drop_to_liquidation_pct = (1 - ltv / liquidation_threshold) x 100, liquidation threshold of a 50/50 cbBTC/WETH collateral mix on Aave V3",
  };
}
