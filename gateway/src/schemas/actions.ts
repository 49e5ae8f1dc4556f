import { DECLARED, TREASURY_ACTIONS, type TreasuryAction } from "@treasury/core/actions";
import { AMOUNT_ALIAS_RULES, hexBytes, queryNumber, requiredWhen, schemaRules, usdcAmount } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";

/** an estimate of a convert names its target: the document's if/then, and the check the estimate runs (PreviewService.estimateFor) */
export const CONVERT_NEEDS_TARGET = requiredWhen({
  member: "target",
  when: "action",
  is: "convert",
  message: "target (btc or eth) is required when action is convert",
  detail: "required for convert",
});

export const EstimateRequest = z
  .strictObject({
    action: z.enum(TREASURY_ACTIONS as [TreasuryAction, ...TreasuryAction[]]),
    amount_usdc: usdcAmount({ exclusiveMin: 0 }).optional(),
    amount: usdcAmount({ exclusiveMin: 0 }).optional(),
    target: z.enum(["btc", "eth"]).optional().openapi({ description: "required when action is convert" }),
  })
  .openapi("EstimateRequest", schemaRules({ ...AMOUNT_ALIAS_RULES, ...CONVERT_NEEDS_TARGET.rule }));
export type EstimateBody = z.infer<typeof EstimateRequest>;

export const RelayRequest = z
  .strictObject({
    tx_id: z.string().regex(/^tx_/, "must start with tx_"),
    signed_transaction: hexBytes({ min: 1 }).openapi({
      description: "the signed transaction's bytes (legacy, EIP-2930 or EIP-1559); bytes that do not decode to one are 400 invalid_signed_transaction",
    }),
  })
  .openapi("RelayRequest");

const Timestamp = z.string().datetime({ offset: true });

/** each action's own id on its receipt (deposit_id: dep_...), from its declaration's receiptId and idPrefix */
const RECEIPT_IDS = Object.fromEntries(
  DECLARED.map((d) => [
    d.receiptId,
    z
      .string()
      .regex(new RegExp(`^${d.idPrefix}_`))
      .optional(),
  ]),
);

export const ActionReceipt = z
  .object({
    sandbox: z.boolean(),
    object: z.literal("action_receipt"),
    action: z.enum(TREASURY_ACTIONS as [TreasuryAction, ...TreasuryAction[]]),
    amount_usdc: z.number(),
    fee_usdc: z.number(),
    ltv_before: z.number(),
    ltv_after: z.number(),
    status: z.enum(["processing", "approved", "completed", "failed"]).openapi({
      description:
        "processing, approved (borrow) or completed as the spec shows them; a managed action on a Safe moves from processing/approved to completed (with tx_hash) or failed (with failure) when its Safe transaction executes",
    }),
    created_at: Timestamp,
    ...RECEIPT_IDS,
    net_amount: z.number().optional(),
    fee_basis: z.string().optional(),
    current_ltv: z.number().optional(),
    target: z.enum(["btc", "eth"]).optional(),
    estimated_amount: z.number().optional(),
    remaining_borrow: z.number().optional(),
  })
  .passthrough()
  .openapi("ActionReceipt", { description: `spec 2.4, per-action variants (${DECLARED.map((d) => d.receiptId).join(", ")})` });

const UnsignedTx = z.object({
  chain: z.string(),
  chain_id: z.number().int(),
  to: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  data: z.string().regex(/^0x[0-9a-fA-F]*$/),
  value: z.string(),
  nonce: z.number().int().nullable(),
});

const StepSummary = z
  .object({ contract: z.string(), function: z.string(), args: z.record(z.string(), z.union([z.string(), z.number()])), description: z.string() })
  .passthrough();

export const UnsignedEnvelope = z
  .object({
    sandbox: z.literal(true),
    object: z.literal("unsigned_transaction"),
    tx_id: z.string().regex(/^tx_/),
    action: z.string(),
    amount_usdc: z.number(),
    status: z.literal("awaiting_signature"),
    unsigned_transaction: UnsignedTx.extend({ summary: StepSummary }),
    expires_at: Timestamp,
    steps: z.array(
      z.object({
        tx_id: z.string().regex(/^tx_/),
        seq: z.number().int(),
        kind: z.enum(["fee_transfer", "approval", "swap", "pool_call"]),
        status: z.enum(["awaiting_signature", "relayed"]),
        unsigned_transaction: UnsignedTx,
        summary: StepSummary,
      }),
    ),
  })
  .passthrough()
  .openapi("UnsignedTransactionEnvelope", { description: "spec 2.5; `to` of unsigned_transaction is the real Aave V3 Pool; steps are relayed in order" });

export const RelayReceipt = z
  .object({
    sandbox: z.boolean(),
    object: z.literal("relay_receipt"),
    tx_id: z.string().regex(/^tx_/),
    tx_hash: z.string().regex(/^0x[0-9a-f]{64}$/),
    simulated: z.boolean(),
    chain: z.string(),
    status: z.literal("confirmed"),
    result: z.object({ action: z.string(), amount_usdc: z.number(), resulting_ltv: z.number() }).passthrough(),
  })
  .passthrough()
  .openapi("RelayReceipt", { description: "spec 2.6" });

export const RelayPending = z
  .object({
    sandbox: z.boolean(),
    object: z.literal("relay_receipt"),
    tx_id: z.string().regex(/^tx_/),
    tx_hash: z.string().regex(/^0x[0-9a-f]{64}$/),
    simulated: z.literal(false),
    chain: z.string(),
    status: z.literal("broadcasting"),
    status_url: z.string(),
  })
  .passthrough()
  .openapi("RelayPending", { description: "the transaction was sent, its receipt did not come in time; the step stays claimed and is reconciled later" });

export const RelayStatus = z
  .object({
    object: z.literal("relay_status"),
    tx_id: z.string(),
    envelope_tx_id: z.string(),
    status: z.enum(["awaiting_signature", "broadcasting", "relayed"]),
    tx_hash: z.string().nullable(),
    receipt: z.record(z.string(), z.unknown()).nullable(),
    failed_attempts: z.array(z.object({ tx_hash: z.string(), reason: z.string(), at: z.string() })),
  })
  .passthrough()
  .openapi("RelayStatus");

export const RelayStepParams = z.object({ tx_id: z.string().regex(/^tx_[0-9a-f]{32}$/, "must be a step id (tx_ followed by 32 hex characters)") });

export const EstimateResult = z
  .object({
    object: z.literal("action_preview"),
    approved: z.boolean(),
    action: z.string(),
    amount_usdc: z.number(),
    service_fee_usdc: z.number(),
    service_fee: z.number(),
    fee_basis: z.string(),
    ltv_before: z.number(),
    ltv_after: z.number(),
    health_score_after: z.number(),
    aave_rate: z.number().nullable(),
    dex_spread: z.number().nullable(),
    net_amount: z.number(),
    estimated_at: Timestamp,
  })
  .passthrough()
  .openapi("EstimateResult", { description: "spec 2.3 with the reference page's estimate fields" });

const Band = z.object({ min: z.number(), max: z.number() });

export const HealthState = z
  .object({
    sandbox: z.boolean(),
    health_score: z.number(),
    ltv: z.number(),
    ltv_zone: z.enum(["safe", "active", "ceiling", "over_ceiling"]),
    auto_repay_active: z.boolean(),
    ltv_zones: z.object({ safe: Band, active: Band, ceiling: Band, hard_ceiling: z.number() }),
  })
  .passthrough()
  .openapi("HealthState", { description: "spec 2.9" });

export const TreasuryState = z
  .object({
    treasury_id: z.string(),
    holdings: z.object({
      btc: z.number(),
      eth: z.number(),
      usdc: z.number(),
      usdc_supplied: z.number().optional().describe("USDC supplied to Aave (its aToken balance), on a chain-backed treasury"),
    }),
    total_value_usd: z.number(),
    borrowed_usd: z.number(),
    ltv: z.number(),
    health_score: z.number(),
    utilization_score: z.number(),
    auto_repay_active: z.boolean(),
    sandbox: z.boolean(),
    usdc_balance: z.number(),
    debt_usdc: z.number(),
  })
  .passthrough()
  .openapi("TreasuryState", { description: "spec 2.8: the reference shape and the machine-readable sample shape together" });

export const AUDIT_PAGE = { default: 100, max: 500 } as const;

export const AuditQuery = z.object({
  limit: queryNumber()
    .pipe(z.number().int().min(1).max(AUDIT_PAGE.max))
    .optional()
    .openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: AUDIT_PAGE.max,
      default: AUDIT_PAGE.default,
      description: "entries per page",
    }),
  cursor: z
    .string()
    .regex(/^\d{1,13}-\d{1,15}$/)
    .optional()
    .openapi({
      param: { name: "cursor", in: "query" },
      description: "the `next_cursor` of the previous page (a position in the trail: time in Unix milliseconds, then insertion number)",
    }),
});

export const AuditList = z
  .object({
    object: z.literal("list"),
    treasury_id: z.string(),
    data: z.array(
      z.object({
        id: z.string(),
        action: z.string(),
        amount_usdc: z.number(),
        fee_usdc: z.number(),
        fee_bps: z.number(),
        fee_basis: z.string(),
        fee_tier: z.string(),
        fee_bearing: z.boolean(),
        trigger: z.string(),
        execution_ref: z.string(),
        created_at: Timestamp,
      }),
    ),
    has_more: z.boolean().openapi({ description: "more entries follow: ask again with cursor = next_cursor" }),
    next_cursor: z.string().nullable(),
  })
  .openapi("FeeAuditTrail", { description: "extension: the fee audit trail of the authenticated treasury (spec 1, rule 5)" });
