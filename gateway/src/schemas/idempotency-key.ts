/**
 * The Idempotency-Key of a state-changing call, declared once: the REST header (its OpenAPI parameter and the
 * check every keyed call runs, services/idempotency.ts `checkIdempotencyKey`) and the `idempotency_key`
 * argument of its MCP tool.
 */
import { z } from "@treasury/core/schemas/zod";

/** printable ASCII (0x21-0x7E at either end, 0x20-0x7E inside): an HTTP header value with no space to trim and no byte above 0x7E */
export const IDEMPOTENCY_KEY_PATTERN = /^[!-~]([ -~]*[!-~])?$/;

export const IdempotencyKey = z
  .string()
  .min(8)
  .max(120)
  .regex(IDEMPOTENCY_KEY_PATTERN)
  .describe(
    "unique per state-changing call (8 to 120 characters; printable ASCII, no space at either end: an HTTP header value); retrying with the same key and arguments returns the first result",
  );
