import { TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import { ACTIONS } from "@treasury/core/actions";
import { AssetSchema, Timestamp, X_RULES, queryNumber, schemaRules, usdcAmount } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";

export const MarketRateEntry = z
  .object({
    chain: z.string(),
    chain_id: z.number().int(),
    borrow_apy_pct: z.number().nullable().openapi({ description: "null when no reading is available (see source)" }),
    source: z.enum(["aave_v3_pool_rpc", "cache", "unavailable"]).openapi({
      description: "aave_v3_pool_rpc: read now from the Pool; cache: last good reading (stale); unavailable: no RPC or no answer",
    }),
    stale: z.boolean(),
    observed_at: Timestamp.nullable(),
    block_number: z.number().int().nullable(),
    pool: z.string(),
    asset: z.string(),
    error: z.string().optional(),
  })
  .openapi("MarketRateEntry");

export const MarketRates = z
  .object({
    object: z.literal("market_rates"),
    environment: z.enum(["live", "partial", "unavailable"]).openapi({
      description: "live only when every entry was read from its chain within the cache window",
    }),
    protocol: z.string(),
    asset: z.literal("USDC"),
    rate_type: z.literal("variable_borrow_apy"),
    rates: z.array(MarketRateEntry),
    note: z.string(),
  })
  .openapi("MarketRates", { description: "spec 2.13" });

export const LiquidationDistanceQuery = z.object({
  ltv: queryNumber()
    .pipe(z.number().min(1).max(75))
    .optional()
    .openapi({ param: { name: "ltv", in: "query" }, type: "number", minimum: 1, maximum: 75, default: 40 }),
});

export const LiquidationDistance = z
  .object({
    object: z.literal("liquidation_distance"),
    ltv: z.number(),
    price_drop_to_liquidation_pct: z.number(),
    service_recommended_ceiling_ltv: z.number(),
    liquidation_threshold_pct: z.number(),
    formula: z.string(),
  })
  .openapi("LiquidationDistance", { description: "spec 2.14" });

export const AddressQuery = z.object({
  address: z
    .string()
    .regex(/^(demo|0x[0-9a-fA-F]{40})$/, "must be 'demo' or a 0x-prefixed 20-byte address")
    .optional()
    .openapi({ param: { name: "address", in: "query" }, default: "demo" }),
});

export const PortfolioState = z
  .object({
    object: z.literal("portfolio_state"),
    current_ltv: z.number(),
    health_score: z.number(),
  })
  .passthrough()
  .openapi("PortfolioState", { description: "spec 2.18 (open object)" });

export const PolicyState = z
  .object({
    object: z.literal("policy_state"),
    environment: z.string(),
    address: z.string(),
    preset: z.string(),
    ltv_bands: z.object({
      safe: z.object({ min: z.number(), max: z.number() }),
      live: z.object({ min: z.number(), max: z.number() }),
      recommended_ceiling: z.number(),
      park_target: z.number(),
    }),
    plan_version: z.string(),
    protection_status: z.string(),
    dormancy_clock: z.object({
      last_fee_bearing_activity_at: Timestamp,
      window_months: z.number(),
      expires_at: Timestamp,
      note: z.string(),
    }),
    protection_authority: z.object({
      target_ltv_after_rewind: z.number(),
      trigger_metric: z.literal("health_score"),
      default_protect_below_health_score: z.number(),
      default_repay_above_health_score: z.number(),
      trigger_rule: z.string(),
      threshold_configurability: z.string(),
      price_dynamics: z.string(),
      repayment_source: z.string(),
      repayment_order: z.array(z.string()).openapi({ description: "the sources the engine repays from, cheapest first" }),
      scope: z.string(),
      max_swap_slippage_bps: z.number().int().openapi({
        description:
          "the most a deleverage's swap may return under Aave's oracle value (fixed in the ProtectionModule, signed by the Safe when it attaches it)",
      }),
      on_chain_bounds: z.array(z.string()).openapi({ description: "what the ProtectionModule checks on chain on every deleverage" }),
      delegation_mechanism: z.string(),
    }),
    delegation: z.object({
      model: z.string(),
      mechanism: z.string(),
      states: z.array(z.enum(["not_granted", "approved_pending_funds", "active", "revoked_pending_settlement", "revoked"])),
      state: z.enum(["not_granted", "approved_pending_funds", "active", "revoked_pending_settlement", "revoked"]),
      approval_requires: z.string(),
      revocation: z.string(),
      wallet_sovereign_alternative: z.string(),
    }),
    monitoring_tier: z.object({ tier: z.string(), check_frequency: z.string() }),
    gas_caps: z.object({ per_action_usd: z.number(), per_month_usd: z.number(), applies_to: z.string() }),
    fee_schedule_ref: z.string().url(),
    invariants: z.array(z.string()),
    docs: z.string().url(),
  })
  .passthrough()
  .openapi("PolicyState", { description: "spec 2.12" });

export const GatewayStatus = z
  .object({
    object: z.literal("gateway_status"),
    status: z.string(),
    supported_assets: z.array(z.string()),
    execution: z.enum(["broadcast", "simulated", "mixed"]).optional().openapi({ description: "summary of `chains`" }),
    chains: z
      .array(
        z.object({
          chain: z.enum(TREASURY_CHAINS),
          execution: z.enum(["broadcast", "simulated"]),
          network: z.enum(["live", "local_sandbox_chain", "test_network", "none"]),
          sandbox_funding: z.boolean(),
          aave: z
            .object({
              pool: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
              pool_revision: z
                .number()
                .int()
                .nullable()
                .openapi({ description: "the Pool's POOL_REVISION(), read from the chain; null when it did not answer" }),
              version: z.string().nullable().openapi({
                description: "the Aave version of that revision (e.g. `3.6` for revision 10); null for a revision the gateway does not know, never guessed",
              }),
            })
            .nullable()
            .openapi({ description: "the chain's Aave Pool as the chain says; null without an RPC (nothing read)" }),
        }),
      )
      .optional()
      .openapi({
        description:
          "per chain: whether relayed transactions are broadcast, to what network, whether the sandbox funds wallets there, and the Aave version its Pool runs",
      }),
  })
  .passthrough()
  .openapi("GatewayStatus", { description: "spec 2.17 (open object)" });

export const PreviewRequest = z
  .strictObject({
    action: z.enum(ACTIONS),
    amount: usdcAmount({ min: 0 }).openapi({ description: "USDC value of the action", minimum: 0 }),
    amount_usdc: usdcAmount({ min: 0 }).optional().openapi({ minimum: 0 }),
    asset: AssetSchema.optional(),
    address: z
      .string()
      .regex(/^(demo|0x[0-9a-fA-F]{40})$/, "must be 'demo' or a 0x-prefixed 20-byte address")
      .optional()
      .openapi({ description: "`demo` (the default) or the wallet of a proven treasury" }),
    current_ltv: z.number().min(0).max(75).optional(),
    initiator: z.string().max(200).optional(),
  })
  .openapi("PreviewRequest", schemaRules({ [X_RULES.equalWhenBothPresent]: ["amount", "amount_usdc"] }));

export const ActionPreview = z
  .object({
    object: z.literal("action_preview"),
    environment: z.string(),
    approved: z.boolean(),
    action: z.string(),
    amount_usdc: z.number(),
    service_fee_usdc: z.number(),
    fee_basis: z.string(),
    ltv_before: z.number(),
    ltv_after: z.number(),
    health_score_after: z.number(),
    requires_signature: z.boolean(),
    unsigned_transaction: z.union([z.string(), z.null()]),
  })
  .passthrough()
  .openapi("ActionPreview", { description: "spec 2.3" });
