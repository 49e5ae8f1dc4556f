import { isExactUsdc } from "../domain/money";
import { z } from "./zod";

export const ErrorResponse = z
  .object({
    error: z.string().openapi({ description: "machine-readable code", example: "invalid_request" }),
    message: z.string().openapi({ description: "human-readable" }),
    request_id: z.string().optional(),
    docs: z.string().url().optional(),
  })
  .passthrough()
  .openapi("ErrorResponse", { description: "Typed error (spec 2.1); contextual fields may follow." });

export const SafetyRailError = ErrorResponse.extend({
  allowed: z.literal(false),
  approved: z.literal(false),
  safe_amount: z.number().openapi({ description: "largest amount that stays within the ceiling; retry with it" }),
  current_ltv: z.number(),
  resulting_ltv: z.number().openapi({ description: "LTV the refused action would cause" }),
  ceiling: z.number().optional(),
  fee_usd: z.number().optional(),
  fee_basis: z.string().optional(),
}).openapi("SafetyRailError", { description: "Safety rail error (spec 2.2), HTTP 403, code ltv_limit_exceeded." });

export const WalletAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address")
  .openapi({ example: "0x1111111111111111111111111111111111111111" });

export const ChainName = z.enum(["arbitrum", "base"]);
export const PresetNameSchema = z.enum(["conservative", "balanced", "aggressive"]);
export const ExecutionModeSchema = z.enum(["wallet", "managed"]);
export const AssetSchema = z.enum(["USDC", "BTC", "ETH"]);

/** A USDC amount as a JSON number, exact to 6 decimals. */
export const usdcAmount = (opts: { min?: number; exclusiveMin?: number; max?: number } = {}) => {
  let n = z.number();
  if (opts.min !== undefined) n = n.min(opts.min);
  if (opts.exclusiveMin !== undefined) n = n.gt(opts.exclusiveMin);
  if (opts.max !== undefined) n = n.max(opts.max);
  return n.refine(isExactUsdc, { message: "must have at most 6 decimal places (USDC precision)" }).openapi({ multipleOf: 0.000001 });
};

/**
 * Rules JSON Schema cannot state, as `x-` keywords of the document (and
 * honoured by test/helpers/schema-sample.ts, which generates requests from it).
 */
export const X_RULES = {
  /** both members sent: they must be equal */
  equalWhenBothPresent: "x-equal-when-both-present",
  /** the listed members must add up to the value */
  sumEquals: "x-sum-equals",
} as const;

/** JSON Schema keywords the metadata type of zod-to-openapi does not list (if/then, x- rules): passed through as they are */
export const schemaRules = (rules: Record<string, unknown>) => rules as Record<string, never>;

/** a body that takes `amount_usdc` or its alias `amount`: at least one, equal when both */
export const AMOUNT_ALIAS_RULES = {
  anyOf: [{ required: ["amount_usdc"] }, { required: ["amount"] }],
  [X_RULES.equalWhenBothPresent]: ["amount_usdc", "amount"],
};

/** A number from a query string, strictly parsed (no empty string, no hex, no whitespace). */
export const queryNumber = () =>
  z
    .string()
    .regex(/^-?\d+(\.\d+)?$/, "must be a decimal number")
    .transform((v) => Number(v))
    .pipe(z.number());

export const Timestamp = z.string().datetime({ offset: true }).openapi({ example: "2026-06-25T12:00:00.000Z" });
