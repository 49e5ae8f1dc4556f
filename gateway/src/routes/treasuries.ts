/** Sandbox keys and treasury registration (spec 4.4). */
import { ASSETS, REFERENCE_LIQUIDATION_THRESHOLD_BPS } from "@treasury/core/domain/assets";
import { formatDecimal } from "@treasury/core/domain/money";
import { HEALTH_SCORE_CAP, LTV_PCT_CAP, ltvZonesOf } from "@treasury/core/domain/position";
import { PRESET_NAMES, PRESETS } from "@treasury/core/domain/presets";
import { ErrorResponse } from "@treasury/core/schemas/common";
import {
  CreateTreasuryRequest,
  OwnershipStatement,
  OwnershipStatementQuery,
  SandboxKey,
  Treasury,
  TreasuryCreateSchema,
  TreasuryIdParams,
} from "../schemas/treasuries";
import { z } from "@treasury/core/schemas/zod";
import type { Runtime } from "../services/context";
import type { TreasuryService } from "../services/treasury-service";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

export function treasuryRoutes(kit: RouteKit, _ctx: Runtime, treasuries: TreasuryService): void {
  kit.route({
    method: "post",
    path: "/api/v1/sandbox/keys",
    operationId: "createSandboxKey",
    summary: "Create a sandbox API key bound to a fresh demo sandbox treasury",
    description:
      "No body, no auth. The key (shown once) is bound to a new managed-mode sandbox treasury seeded with the demo portfolio, so an evaluator can call the authenticated endpoints at once.",
    tags: ["Sandbox"],
    responses: {
      201: { description: "sandbox key (spec 2.10)", schema: SandboxKey },
      429: { description: "rate limited", schema: ErrorResponse },
      503: err("sandbox key capacity exhausted (Retry-After)"),
    },
    errors: ["sandbox_unavailable"],
    handler: async () => ({ status: 201, body: await treasuries.createSandboxKey(), headers: { "Cache-Control": "no-store" } }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/treasuries",
    operationId: "getTreasuryCreateSchema",
    summary: "Input schema, presets and the formulas behind the figures",
    tags: ["Treasuries"],
    tool: {
      name: "get_treasury_schema",
      title: "Treasury presets and definitions",
      description: "Presets (LTV bands, ceilings, park targets) and the formulas behind every figure.",
    },
    responses: { 200: { description: "treasury creation schema", schema: TreasuryCreateSchema }, ...RATE_LIMITED },
    handler: () => ({ status: 200, body: treasuryCreateSchemaDocument() }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/treasuries",
    operationId: "createTreasury",
    summary: "Register a sandbox treasury for a wallet",
    tool: {
      name: "create_sandbox_treasury",
      title: "Create a sandbox treasury",
      description:
        "Register a sandbox treasury for a wallet (default: Base, balanced preset, wallet execution mode). Returns the treasury and its sandbox API key, shown once: send it as `Authorization: Bearer <key>` on later MCP requests.",
      idempotent: false,
    },
    description:
      "Returns the treasury and its sandbox API key; the key is shown only in this response. With ownership_proof (the wallet's signed statement) the treasury is `proven` and serves the wallet's x402 payments and public address views; without it, it is `unproven` and reachable only with its API key, and nothing the service does on a chain follows from it: a managed one keeps a sandbox ledger of its own (the sandbox never funds, impersonates or provides steps for its wallet, and a Safe's transactions are queued only for the registration the Safe itself proved). Free credential creation is limited per client address (429).",
    tags: ["Treasuries"],
    request: {
      body: CreateTreasuryRequest,
      example: { wallet_address: "0x1111111111111111111111111111111111111111", chain: "base", preset: "balanced", execution_mode: "wallet" },
    },
    responses: {
      200: { description: "treasury (spec 2.7) with api_key", schema: Treasury },
      400: err("invalid body, or an ownership proof that does not verify (invalid_ownership_proof: wrong signer, stale, reused nonce)"),
      503: err("an EIP-1271 proof could not be checked: no answer from the chain"),
      ...RATE_LIMITED,
    },
    errors: ["invalid_ownership_proof", "chain_unavailable"],
    handler: async ({ body }) => ({ status: 200, body: await treasuries.create(body), headers: { "Cache-Control": "no-store" } }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/treasuries/ownership-statement",
    operationId: "getOwnershipStatement",
    summary: "The typed data a wallet signs to prove ownership at registration (extension)",
    tags: ["Treasuries"],
    extension: true,
    request: { query: OwnershipStatementQuery },
    responses: { 200: { description: "EIP-712 typed data with a fresh nonce", schema: OwnershipStatement }, 400: err("invalid query"), ...RATE_LIMITED },
    handler: ({ query }) => ({
      status: 200,
      body: treasuries.ownershipStatement(query.wallet_address, query.chain, query.execution_mode),
      headers: { "Cache-Control": "no-store" },
    }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/treasuries/:id",
    operationId: "getTreasury",
    summary: "Treasury configuration, preset and simulated state",
    tags: ["Treasuries"],
    request: { params: TreasuryIdParams },
    responses: {
      200: { description: "treasury (spec 2.7), without api_key", schema: Treasury },
      400: err("malformed id"),
      404: err("treasury does not exist"),
      ...RATE_LIMITED,
    },
    errors: ["treasury_not_found"],
    handler: async ({ params }) => ({ status: 200, body: await treasuries.view(await treasuries.get(params.id)) }),
  });
}

export function treasuryCreateSchemaDocument() {
  return {
    object: "treasury_create_schema",
    presets: PRESET_NAMES,
    input_schema: z.toJSONSchema(CreateTreasuryRequest, { io: "input", unrepresentable: "any" }),
    preset_definitions: Object.fromEntries(
      PRESET_NAMES.map((name) => {
        const p = PRESETS[name];
        return [
          name,
          {
            description: p.description,
            live_band: p.liveBand,
            ceiling: p.ceiling,
            park_target: p.parkTarget,
            ltv_zones: ltvZonesOf(p),
            protect_below_health_score: p.protectBelowHealthScore,
            repay_above_health_score: p.repayAboveHealthScore,
          },
        ];
      }),
    ),
    definitions: {
      ltv: "debt / collateral value x 100 (percent); idle USDC is not collateral",
      ltv_cap: `${LTV_PCT_CAP} when debt remains and no collateral does`,
      health_score: "Aave health factor: collateral value x weighted liquidation threshold / debt, rounded down to 2 decimals",
      health_score_without_debt: `${HEALTH_SCORE_CAP} (Aave reports an infinite health factor; JSON has no infinity, so the score is capped)`,
      liquidation: "a position is liquidatable on Aave when its health score falls below 1, i.e. when LTV reaches the weighted liquidation threshold",
      price_drop_to_liquidation_pct: "(1 - ltv / liquidation_threshold) x 100",
      reference_liquidation_threshold_pct: REFERENCE_LIQUIDATION_THRESHOLD_BPS / 100,
      assets: Object.values(ASSETS).map((a) => ({
        symbol: a.symbol,
        max_ltv_pct: a.maxLtvBps / 100,
        liquidation_threshold_pct: a.liquidationThresholdBps / 100,
        sandbox_price_usd: Number(formatDecimal(a.sandboxPriceMicro, 6)),
      })),
      safety_rail:
        "an action that raises LTV and would end above the preset's ceiling is refused (403 ltv_limit_exceeded) with safe_amount, the largest amount that stays within it",
      fees: "deposit 2%, convert 2%, borrow: the cycle fee of the current tier (2% at launch); every downward leg is free; rounded half up to the micro-USDC; see /fees.json",
      amounts: "USDC amounts are JSON numbers with at most 6 decimals; inside the service they are exact integers of micro-USDC",
    },
  };
}
