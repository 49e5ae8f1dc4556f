import { CHAINS, TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import { STATEMENT_MAX_AGE_SECONDS, STATEMENT_NONCE_PATTERN } from "@treasury/core/domain/statements";
import { ChainName, DateTimeInput, ExecutionModeSchema, hexBytes, PresetNameSchema, Timestamp, WalletAddress } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";

/** a signed statement (EIP-712, or EIP-1271 for a contract wallet): signature, its nonce and issue time */
export const SignedProof = z
  .strictObject({
    signature: hexBytes({ min: 65, max: 9_999 }).openapi({
      description:
        "EIP-712 signature of the statement by the wallet (65 bytes: r, s, v); for a contract wallet (a Safe), the bytes its EIP-1271 isValidSignature accepts (65 to 9,999). A well-formed signature that does not verify is refused by the proof's state (invalid_ownership_proof, invalid_safe_proof), not as malformed",
    }),
    nonce: z
      .string()
      .regex(STATEMENT_NONCE_PATTERN, "must be 16 to 128 characters of A-Z a-z 0-9 . _ : -")
      .openapi({ description: "fresh, single use per wallet (16 to 128 characters of A-Z a-z 0-9 . _ : -)" }),
    issued_at: DateTimeInput.openapi({
      description: `the time the statement was signed, exactly as signed (the signed statement's issuedAt); accepted from ${STATEMENT_MAX_AGE_SECONDS} seconds before the service's clock to 60 seconds after it (outside: a refusal of the proof's state, not of its form)`,
    }),
  })
  .openapi("SignedProof");

export const CreateTreasuryRequest = z
  .strictObject({
    wallet_address: WalletAddress,
    chain: ChainName.optional().default("base"),
    preset: PresetNameSchema.optional().default("balanced"),
    execution_mode: ExecutionModeSchema.optional().default("wallet"),
    ownership_proof: SignedProof.optional().openapi({
      description: `Optional proof that the caller controls wallet_address: the wallet's EIP-712 signature of RegisterTreasury(string service, address wallet, string chain, string executionMode, string nonce, string issuedAt) in the domain {name: 'Agent Treasury Gateway', version: '1', chainId: ${TREASURY_CHAINS.map((c) => `${CHAINS[c].chainId} (${c})`).join(" or ")}}, where service is this gateway's public base URL. A contract wallet signs through EIP-1271. With it the treasury is \`proven\`: the wallet's x402 payments and the public address views use it. Without it the treasury is \`unproven\`: reachable only with its own API key, never selected for the wallet's payments or public views. GET /api/v1/treasuries/ownership-statement returns the exact typed data to sign.`,
    }),
  })
  .openapi("CreateTreasuryRequest");

export const OwnershipStatementQuery = z.object({
  wallet_address: WalletAddress,
  chain: ChainName.optional().default("base"),
  execution_mode: ExecutionModeSchema.optional().default("wallet"),
});

export const OwnershipStatement = z
  .object({
    object: z.literal("ownership_statement"),
    typed_data: z.record(z.string(), z.unknown()),
    nonce: z.string(),
    issued_at: z.string(),
    expires_at: z.string(),
    how: z.string(),
  })
  .openapi("OwnershipStatement");

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
    api_key: z
      .string()
      .regex(/^sk_test_/)
      .optional()
      .openapi({ description: "returned on creation only" }),
    api_key_expires_at: Timestamp.optional(),
    wallet_address: z.string(),
    chain: ChainName,
    preset: PresetNameSchema,
    policy: Policy,
    execution_mode: ExecutionModeSchema,
    ownership: z.enum(["unproven", "proven", "paid"]).openapi({
      description:
        "unproven: registered without a proof, reachable only with its API key; proven: a signed ownership statement; paid: created by the wallet's own x402 payment",
    }),
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
  id: z.string().max(128).regex(/^trs_/, "must be a treasury id (starts with trs_)"),
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
