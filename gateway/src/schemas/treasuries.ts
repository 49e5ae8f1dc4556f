import { ChainName, ExecutionModeSchema, PresetNameSchema, Timestamp, WalletAddress } from "./common";
import { z } from "./zod";

export const CreateTreasuryRequest = z
  .strictObject({
    wallet_address: WalletAddress,
    chain: ChainName.optional().default("base"),
    preset: PresetNameSchema.optional().default("balanced"),
    execution_mode: ExecutionModeSchema.optional().default("wallet"),
  })
  .openapi("CreateTreasuryRequest");

const Policy = z.object({
  live_band: z.object({ min: z.number(), max: z.number() }),
  ceiling: z.number(),
  park_target: z.number(),
});

export const Treasury = z
  .object({
    sandbox: z.literal(true),
    object: z.literal("treasury"),
    treasury_id: z.string().regex(/^trs_/),
    api_key: z.string().regex(/^sk_test_/).optional().openapi({ description: "returned on creation only" }),
    api_key_expires_at: Timestamp.optional(),
    wallet_address: z.string(),
    chain: ChainName,
    preset: PresetNameSchema,
    policy: Policy,
    execution_mode: ExecutionModeSchema,
    status: z.string(),
    created_at: Timestamp,
    state: z
      .object({
        usdc_balance: z.number(),
        ltv: z.number(),
        health_score: z.number(),
        environment: z.string(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough()
  .openapi("Treasury", { description: "spec 2.7" });

export const TreasuryIdParams = z.object({
  id: z.string().regex(/^trs_[0-9a-f]{32}$/, "must be a treasury id (trs_ followed by 32 hex characters)"),
});

export const TreasuryCreateSchema = z
  .object({
    object: z.literal("treasury_create_schema"),
    presets: z.array(PresetNameSchema),
    input_schema: z.record(z.string(), z.unknown()),
    preset_definitions: z.record(z.string(), z.unknown()),
    definitions: z.record(z.string(), z.unknown()),
  })
  .passthrough()
  .openapi("TreasuryCreateSchema");

export const SandboxKey = z
  .object({
    sandbox: z.literal(true),
    key: z.string().regex(/^sk_test_/),
    expires_at: Timestamp,
    docs: z.string().url().optional(),
    treasury_id: z.string().regex(/^trs_/),
  })
  .passthrough()
  .openapi("SandboxKey", { description: "spec 2.10" });
