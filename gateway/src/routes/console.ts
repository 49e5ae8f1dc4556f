/**
 * The console's API (extension, issue 15): an operator signs in with a Safe
 * owner's wallet (EIP-4361 message, personal_sign) and gets a console
 * session bound to the Safe's managed treasury; the position's history for
 * the chart. The console page itself is served by console/serve.ts.
 */
import { STATEMENT_MAX_AGE_SECONDS, STATEMENT_NONCE_PATTERN } from "@treasury/core/domain/statements";
import { DateTimeInput } from "@treasury/core/schemas/common";
import { z } from "@treasury/core/schemas/zod";
import { requireCredential } from "../http/credential";
import type { ConsoleSessionService } from "../services/console-sessions";
import { HISTORY_MAX_POINTS, type TreasuryService } from "../services/treasury-service";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address");

const SignInQuery = z.object({
  owner: Address.openapi({ param: { name: "owner", in: "query" }, description: "the Safe owner's address (the wallet that signs)" }),
  safe: Address.openapi({ param: { name: "safe", in: "query" }, description: "the Safe of a managed treasury" }),
});

const SignInStatement = z
  .object({
    object: z.literal("console_sign_in"),
    owner: z.string(),
    safe: z.string(),
    chain: z.string(),
    nonce: z.string(),
    issued_at: z.string(),
    message: z.string(),
    sign_with: z.string(),
  })
  .openapi("ConsoleSignInStatement");

const SessionRequest = z
  .strictObject({
    owner: Address,
    safe: Address,
    nonce: z
      .string()
      .regex(STATEMENT_NONCE_PATTERN, "must be 16 to 128 characters of A-Z a-z 0-9 . _ : -")
      .openapi({ description: "the sign-in message's nonce (GET /api/v1/console/sign-in), single use" }),
    issued_at: DateTimeInput.openapi({
      description: `the sign-in message's issued-at time, exactly as in the message; accepted from ${STATEMENT_MAX_AGE_SECONDS} seconds before the service's clock to 60 seconds after it (outside: 401 unauthorized)`,
    }),
    signature: z
      .string()
      .regex(/^0x[0-9a-fA-F]{130}$/, "must be a 65-byte signature, 0x-prefixed hex")
      .openapi({
        description: "personal_sign (EIP-191) of the message by the owner: 65 bytes (r, s, v); one that does not recover to the owner is 401 unauthorized",
      }),
  })
  .openapi("ConsoleSessionRequest");

const Session = z
  .object({
    object: z.literal("console_session"),
    session_key: z.string().regex(/^sk_console_/),
    expires_at: z.string(),
    treasury_id: z.string(),
    safe: z.string(),
    owner: z.string(),
    chain: z.string(),
    owners: z.array(z.string()),
    threshold: z.number().int(),
  })
  .openapi("ConsoleSession");

const HistoryQuery = z.object({
  since: DateTimeInput.optional().openapi({
    param: { name: "since", in: "query" },
    description: "ISO 8601 time of the oldest sample wanted (default: 24 hours ago)",
  }),
});

const History = z
  .object({
    object: z.literal("position_history"),
    treasury_id: z.string(),
    points: z.array(z.object({ at: z.string(), ltv: z.number(), health_score: z.number(), collateral_usd: z.number(), debt_usdc: z.number() })),
    note: z.string(),
  })
  .openapi("PositionHistory");

export function consoleRoutes(kit: RouteKit, sessions: ConsoleSessionService, treasuries: TreasuryService): void {
  kit.route({
    method: "get",
    path: "/api/v1/console/sign-in",
    operationId: "getConsoleSignIn",
    summary: "The sign-in message a Safe owner signs to open the console (extension)",
    description:
      "Extension of the spec: an EIP-4361 (Sign-In with Ethereum) message naming this service, the owner, the Safe, a fresh nonce and a 10-minute window, for personal_sign. The Safe must be the wallet of a managed treasury.",
    tags: ["Managed"],
    security: "none",
    extension: true,
    request: { query: SignInQuery },
    responses: {
      200: { description: "the message to sign", schema: SignInStatement },
      400: err("invalid query"),
      404: err("no managed treasury for this Safe"),
      ...RATE_LIMITED,
    },
    errors: ["treasury_not_found"],
    handler: async ({ query }) => {
      const q = query as { owner: `0x${string}`; safe: `0x${string}` };
      return { status: 200, body: await sessions.statement(q.owner, q.safe), headers: { "Cache-Control": "no-store" } };
    },
  });

  kit.route({
    method: "post",
    path: "/api/v1/console/sessions",
    operationId: "createConsoleSession",
    summary: "Sign in to the console with a Safe owner's signature (extension)",
    description:
      "Extension of the spec: the owner's personal_sign signature of the sign-in message (rebuilt by the service from these fields). Accepted when it recovers to `owner`, `owner` is an owner of the Safe on chain now, and the nonce is unused; the answer's `session_key` (sk_console_, shown once, stored hashed) is a bearer key of the Safe's managed treasury for 8 hours, while `owner` stays an owner of the Safe: each write made with it checks `isOwner` on chain again, a read when the last check is older than 60 seconds, and an owner who is gone has the key revoked (401 owner_removed from then on).",
    tags: ["Managed"],
    security: "none",
    extension: true,
    request: {
      body: SessionRequest,
      examples: {
        stale: {
          summary: "a sign-in whose message was issued long ago: 401 unauthorized (sign the message GET /api/v1/console/sign-in returns, within 600 seconds)",
          value: {
            owner: "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A",
            safe: "0x1111111111111111111111111111111111111111",
            nonce: "3f1c0a9e5b7d4c2a8e6f0b1d3c5a7e9f",
            issued_at: "2025-01-01T00:00:00.000Z",
            signature: "0xb86c09436a5b93dbcb32edf9174b4dad3ccf9917a3f0c827b5861a2279776d5c7d04220c0a1aee6fef1b0f3ab0453c5238410021e0adfdbc1d19a8ed38c72ce81c",
          },
          answers: { status: 401, error: "unauthorized" },
        },
      },
    },
    responses: {
      200: { description: "the console session", schema: Session },
      400: err("invalid body"),
      401: err("the signature, time or nonce is not acceptable (unauthorized, with the reason)"),
      403: err("the signer is not an owner of the Safe (not_an_owner)"),
      404: err("no managed treasury for this Safe"),
      ...RATE_LIMITED,
      503: err("the Safe's owners could not be read on its chain"),
    },
    errors: ["unauthorized", "not_an_owner", "treasury_not_found", "chain_unavailable"],
    handler: async ({ body }) => ({ status: 200, body: await sessions.signIn(body as never), headers: { "Cache-Control": "no-store" } }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/health/history",
    operationId: "getPositionHistory",
    summary: "The treasury's LTV and health score over time (extension)",
    description: `Extension of the spec: samples of the managed treasury's Aave position taken by the protection engine (one a minute, or at once when the LTV moved by half a point) and after each executed Safe transaction, oldest first, at most ${HISTORY_MAX_POINTS}; kept 30 days.`,
    tags: ["Reads"],
    security: "bearer",
    extension: true,
    request: { query: HistoryQuery },
    responses: {
      200: { description: "the samples", schema: History },
      400: err("invalid query"),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    handler: async ({ res, query }) => ({
      status: 200,
      body: await treasuries.healthHistory(requireCredential(res).treasuryId, (query as { since?: string }).since),
    }),
  });
}
