/**
 * What taking x402 adds to a priced route's OpenAPI operation: the 402 (the v1 challenge body, v2's
 * PAYMENT-REQUIRED header), the refusals of the payment stages (appended to a status the route already
 * documents), and the settlement headers of a paid success.
 */
import { ErrorResponse } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";
import type { ResponseSpec } from "../route-spec";

/** The x402 v1 challenge body (x402-express), with the service's typed-error fields alongside. */
export const X402Challenge = z
  .object({
    x402Version: z.literal(1),
    error: z.string(),
    accepts: z.array(
      z
        .object({
          scheme: z.literal("exact"),
          network: z.string(),
          maxAmountRequired: z.string(),
          resource: z.string(),
          description: z.string(),
          payTo: z.string(),
          asset: z.string(),
          maxTimeoutSeconds: z.number(),
        })
        .passthrough(),
    ),
    message: z.string().optional(),
    request_id: z.string().optional(),
    payer: z.string().optional().openapi({ description: "the payer of a refused payment" }),
    reason: z.string().optional().openapi({ description: "with invalid_payment and settlement_failed: the facilitator's reason, as a code" }),
  })
  .passthrough()
  .openapi("X402Challenge");

/** the 402 of a priced route: a challenge, or a refused payment */
export const PAYMENT_REQUIRED: ResponseSpec = {
  description:
    "payment required: an x402 version 1 challenge in the body (accepts) and the same requirements in x402 version 2's PAYMENT-REQUIRED header when no credential is sent, or a refused payment (both again), its reason in `error`: the facilitator's verdict (e.g. invalid_exact_evm_payload_signature), a mismatch with this route's requirements, invalid_payment_header (a proof that does not parse: for a session or upto proof, its accepted requirements (amount a decimal string, maxTimeoutSeconds an integer, asset and payTo addresses; a session's extra an object), its channel configuration (withdrawDelay an integer of 0 to 2^40 - 1) or its Permit2 authorization), invalid_payment (a proof the facilitator refused as malformed; its reason code in `reason`), settlement_failed (nothing charged), or payment_already_used (a spent proof proves nothing: to get the stored answer of a request whose answer was lost, retry with the same Idempotency-Key or payment-identifier and a fresh proof, which is verified and released unsettled)",
  schema: X402Challenge,
  headers: {
    "PAYMENT-REQUIRED": {
      description: "x402 version 2: base64 of the PaymentRequired JSON (x402Version 2, error, resource, accepts with CAIP-2 network eip155:84532 and `amount`)",
      schema: { type: "string" as const },
    },
    "WWW-Authenticate": {
      description: "the credentials this route takes: Bearer, x402 v1 (X-PAYMENT), x402 v2 (PAYMENT-SIGNATURE)",
      schema: { type: "string" as const },
    },
  },
};

/** what paying with x402 adds to a priced route's answers (appended to a status the route already documents) */
export const paymentResponses = (own: Record<number, ResponseSpec>): Record<number, ResponseSpec> => {
  const add = {
    503: "payment_facilitator_unavailable: the x402 facilitator could not be reached to verify the proof, or answered 5xx (nothing was charged; Retry-After; its 4xx is a 402); payment_settlement_unknown: the facilitator did not answer the settlement, which may still be mined: retry with the same proof (or, on an action, the same Idempotency-Key): the request is served once and charged at most once (Retry-After)",
    400: "invalid_payment_identifier: a v2 proof's payment-identifier id is not 16 to 128 characters of [A-Za-z0-9_-]",
    409: "payment_in_progress: the same proof, or a proof with the same payment-identifier (x402 v2), is still being served: retry after Retry-After seconds (charged at most once; never a 402, which would make a conforming client pay again); payment_identifier_reused: that identifier was used for a different request",
  } as const;
  return Object.fromEntries(
    Object.entries(add).map(([status, text]) => {
      const existing = own[Number(status)];
      return [status, existing ? { ...existing, description: `${existing.description}; ${text}` } : { description: text, schema: ErrorResponse }];
    }),
  );
};

/** the settlement of a paid request, in the version its proof was made in */
export const PAYMENT_RESPONSE_HEADERS = {
  "X-PAYMENT-RESPONSE": {
    description: "paid with x402 version 1: base64 of the settlement JSON (success, transaction, network base-sepolia, payer)",
    schema: { type: "string" as const },
  },
  "PAYMENT-RESPONSE": {
    description: "paid with x402 version 2: base64 of the settlement JSON (success, transaction, network eip155:84532, payer)",
    schema: { type: "string" as const },
  },
};
