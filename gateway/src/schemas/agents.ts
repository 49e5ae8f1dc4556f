import { ChainName, personText, Timestamp, WalletAddress } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";

export const AccessRequestBody = z
  .strictObject({
    // text a person reads (common.ts personText): no control or bidirectional characters; the trimmed lengths
    // (at least 2 and 20 characters between the first and last non-space) are part of its pattern
    operator_name: personText({ min: 2, max: 200 }),
    // zod's e-mail rule, stricter than format: email (ASCII letters, digits and _'+-. only), stated as its own pattern
    operator_email: z.email().max(254).openapi({ pattern: z.regexes.email.source }),
    use_case: personText({ min: 20, max: 5000, multiline: true }),
    agent_name: personText({ max: 200 }).optional(),
    agent_framework: personText({ max: 200 }).optional(),
    company: personText({ max: 200 }).optional(),
    wallet_address: WalletAddress.optional(),
    chain: ChainName.optional(),
    expected_monthly_volume_usdc: z.number().min(0).max(1e12).optional(),
  })
  .openapi("AccessRequestBody");

export const AccessRequest = z
  .object({
    object: z.literal("agent_access_request"),
    id: z.string().regex(/^agr_/),
    status: z.enum(["received", "in_review", "closed"]),
    status_url: z.string().url(),
    submitted_at: Timestamp,
    review_process: z.string(),
    status_meaning: z.object({ received: z.string(), in_review: z.string(), closed: z.string() }),
    docs: z.string().url(),
  })
  .passthrough()
  .openapi("AgentAccessRequest", { description: "spec 2.11" });

export const AccessRequestIdParams = z.object({
  id: z.string().max(128).regex(/^agr_/, "must be an access request id (starts with agr_)"),
});

export const AccessSchemaDocument = z
  .object({
    object: z.literal("agent_access_schema"),
    required: z.array(z.string()),
    input_schema: z.record(z.string(), z.unknown()),
  })
  .passthrough()
  .openapi("AgentAccessSchema");

export const ReviewTransitionBody = z.strictObject({
  reviewer: personText({ min: 2, max: 200 }),
  outcome: z.enum(["approved", "declined"]).optional(),
  note: personText({ max: 2000, multiline: true }).optional(),
  treasury_id: z
    .string()
    .regex(/^trs_[0-9a-f]{32}$/)
    .optional(),
});
