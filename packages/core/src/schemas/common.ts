import { TREASURY_CHAINS } from "../contracts/chains";
import { isExactUsdc } from "../domain/money";
import { ERROR_CODES, TreasuryError } from "../lib/errors";
import { z } from "./zod";

export const ErrorResponse = z
  .object({
    error: z.enum(ERROR_CODES).openapi({ description: "machine-readable code, one of a closed set a client can branch on", example: "invalid_request" }),
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

/**
 * A treasury chain in a request or a treasury. Its OpenAPI enum lists the chains alphabetically
 * (arbitrum, base), as it always has; the status and Safe transaction schemas list TREASURY_CHAINS as declared.
 */
export const ChainName = z.enum([...TREASURY_CHAINS].sort());
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

/**
 * A member a body must send when another member has a given value, declared once: `rule` is its JSON Schema
 * (if/then) in the document, `check` enforces it on the parsed body (the zod schema does not state it), with
 * a typed invalid_request naming the member.
 */
export function requiredWhen(o: { member: string; when: string; is: string; message: string; detail: string }) {
  return {
    rule: { if: { properties: { [o.when]: { const: o.is } }, required: [o.when] }, then: { required: [o.member] } },
    check(body: Record<string, unknown>): void {
      if (body[o.when] === o.is && !body[o.member]) {
        throw new TreasuryError("invalid_request", o.message, { details: [{ location: "body", field: o.member, message: o.detail }] });
      }
    },
  };
}

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

/**
 * A time a client sends: RFC 3339 as zod reads it, narrower than the `date-time` format (an upper-case T
 * and Z, seconds always, an offset with its colon, a real calendar day), so the document states zod's own
 * pattern beside the format: what it allows is what the gateway accepts.
 */
export const DateTimeInput = z.iso
  .datetime({ offset: true, message: "must be an RFC 3339 date-time (2026-06-25T12:00:00Z, or with an offset +02:00)" })
  .openapi({ pattern: z.regexes.datetime({ offset: true }).source });

/** Bytes as 0x-prefixed hex: whole bytes (an even number of digits), `min` to `max` of them (no upper bound without `max`). */
export const hexBytes = (o: { min: number; max?: number }) =>
  z
    .string()
    .regex(
      new RegExp(`^0x(?:[0-9a-fA-F]{2}){${o.min},${o.max ?? ""}}$`),
      `must be ${o.max === undefined ? `at least ${o.min}` : `${o.min} to ${o.max}`} bytes as 0x-prefixed hex (two digits a byte)`,
    );

/**
 * Text a client writes and a person reads (an access request's names and use case, a borrow's purpose, the
 * reviewer's name and note: the admin API, the console, the operator's e-mail). Refused anywhere in it:
 * C0 controls (NUL, ESC, ...) but tab, line feed and carriage return; DEL and the C1 controls (U+0080-U+009F:
 * NEL, CSI, ...); the bidirectional controls that reorder what a person sees (embeddings and overrides
 * U+202A-U+202E, isolates U+2066-U+2069, the marks U+200E, U+200F and U+061C: right-to-left scripts render
 * without them). A one-line text (every one but `multiline`) also refuses tab, line feed, carriage return
 * and the line and paragraph separators U+2028, U+2029. Accents, emoji (joiners included), CJK and
 * right-to-left letters pass as written.
 */
const CONTROLS = "\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F";
const BIDI_CONTROLS = "\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069";
const LINE_BREAKS = "\\t\\n\\r\\u2028\\u2029";

/**
 * The rule as one ECMA-262 pattern (what the OpenAPI document, the MCP tools' schemas and the gateway use
 * alike): only allowed characters and, with `min`, at least `min` characters from the first to the last
 * non-space (what trimming leaves). Linear time: the leading lookahead refuses a forbidden character before
 * anything backtracks, and the rest backtracks only over the surrounding spaces.
 */
export function personTextPattern(opts: { min?: number; multiline?: boolean } = {}): string {
  const refused = CONTROLS + BIDI_CONTROLS + (opts.multiline ? "" : LINE_BREAKS);
  const allowed = `[^${refused}]`;
  const space = `[^\\S${refused}]`;
  const visible = `[^\\s${refused}]`;
  const min = opts.min ?? 0;
  if (min === 0) return `^${allowed}*$`;
  const body = min === 1 ? `${space}*${visible}` : `${space}*${visible}${allowed}{${min - 2},}${visible}`;
  return `^(?=${allowed}*$)${body}${allowed}*$`;
}

/**
 * A field of text a person reads: the one declaration of the rule above. Its length and pattern apply to
 * the text as sent (so the document's minLength, maxLength and pattern are exactly what is enforced); the
 * value kept is trimmed.
 */
export const personText = (opts: { max: number; min?: number; multiline?: boolean }) => {
  const min = opts.min ?? 0;
  const rule =
    `must be text a person can read: no control characters (U+0000-U+001F ${opts.multiline ? "but tab, line feed and carriage return" : "with tab, line feed and carriage return, and no U+2028, U+2029: one line"}; U+007F-U+009F) ` +
    `and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)` +
    (min > 0 ? `, at least ${min} characters between the first and last non-space` : "");
  // a length that is off is the one reason given (the pattern is not tried on it)
  const s = min > 0 ? z.string().min(min, { abort: true }) : z.string();
  return s
    .max(opts.max, { abort: true })
    .regex(new RegExp(personTextPattern({ min, multiline: opts.multiline })), rule)
    .trim()
    .openapi({ description: `text a person reads (kept trimmed): ${rule.replace(/^must be text a person can read: /, "")}` });
};

/** an action's amount, USDC: greater than 0 (or at least `min`) and at most 100,000 (spec 8) */
const actionAmountField = (min?: number) =>
  min === undefined
    ? usdcAmount({ exclusiveMin: 0, max: 100_000 }).openapi({ exclusiveMinimum: 0, maximum: 100_000 })
    : usdcAmount({ min, max: 100_000 }).openapi({ minimum: min, maximum: 100_000 });

/** the amount fields of an action's body: `amount_usdc` and its alias `amount` (spec 4.5) */
export const actionAmounts = (min?: number) => ({
  amount_usdc: actionAmountField(min).optional().openapi({ description: "USDC amount (required unless its alias `amount` is sent)" }),
  amount: actionAmountField(min).optional().openapi({ description: "alias of amount_usdc; when both are sent they must be equal" }),
});
