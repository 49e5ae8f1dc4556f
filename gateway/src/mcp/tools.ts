/**
 * The MCP tools. Each one calls the same services as its REST twin (no second
 * implementation of any rule) and takes the same input schema. Authenticated
 * tools use the bearer key of the HTTP request that carried the MCP call.
 */
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { ZodRawShape, ZodType } from "zod";
import { feeScheduleDocument } from "../domain/fee-schedule";
import type { TreasuryAction } from "../domain/fees";
import { relayScope } from "../services/relay-service";
import { ApiError, statusOf } from "../http/errors";
import { isErrorCode } from "../lib/errors";
import { chainAsPosition } from "../chain/chain-gateway";
import type { Credential } from "../http/credential";
import { treasuryCreateSchemaDocument } from "../routes/treasuries";
import { BorrowRequest, ConvertRequest, DepositRequest, EstimateRequest, RelayRequest, RepayRequest } from "../schemas/actions";
import { AccessRequestBody } from "../schemas/agents";
import { PreviewRequest } from "../schemas/public";
import { CreateTreasuryRequest } from "../schemas/treasuries";
import { z } from "../schemas/zod";
import type { Services } from "../services/services";
import type { ServiceContext } from "../services/context";
import { idempotent, requestFingerprint } from "../services/idempotency";
import { liquidationDistanceDocument } from "../services/liquidation-distance";
import { resolveAmount } from "../services/preview-service";
import { resolveSubject } from "../services/subject";

export interface ToolContext {
  /** the credential of the HTTP request, or a typed 401 */
  credential(): Promise<Credential>;
  /** the credential if the request carries a valid one, else undefined */
  optionalCredential(): Promise<Credential | undefined>;
  requestId: string;
  /** does the HTTP request carry Authorization? (a bearer key decides, as on REST) */
  hasBearer: boolean;
  /** x402 for priced tools (absent when x402 is off) */
  paidCalls?: {
    required(route: PricedRoute): Record<string, unknown>;
    call(route: PricedRoute, args: Record<string, unknown>, payment: unknown): Promise<CallToolResult>;
  };
  /** take one write from the caller's write budget, or throw the typed 429 */
  chargeWrite(): Promise<void>;
}

/** the REST route with an x402 price that a tool stands for */
export interface PricedRoute {
  method: "GET" | "POST";
  path: string;
}

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: ZodRawShape;
  annotations: ToolAnnotations;
  authenticated: boolean;
  /** REST twin, for discovery and docs */
  rest: string;
  /** set when the REST twin has an x402 price: the tool can be paid for instead of called with a key */
  paid?: PricedRoute;
  /** the shape of a successful result's structuredContent (from the REST twin's documented answers) */
  outputSchema?: z.ZodObject;
  run(args: Record<string, unknown>, tc: ToolContext): Promise<unknown>;
}

const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const idempotencyKey = z.string().min(8).max(120).describe("unique per state-changing call (8 to 120 characters); retrying with the same key and arguments returns the first result");

/** strip the MCP-only argument and keep the REST body */
function bodyOf(args: Record<string, unknown>): Record<string, unknown> {
  const { idempotency_key: _drop, ...body } = args;
  return body;
}

/** what a refused tool call carries in structuredContent: the typed error body, or x402's PaymentRequired */
const REFUSAL = z.object({
  error: z.string().describe("machine-readable code of a refusal (isError: true)"),
  message: z.string(),
  request_id: z.string(),
  http_status: z.number().int().describe("the HTTP status of the answer (REST twin's, or the refusal's)"),
  idempotent_replayed: z.boolean().describe("the stored answer of an earlier call with the same idempotency key"),
  x402Version: z.literal(2).describe("payment required (isError: true): x402's PaymentRequired"),
  accepts: z.array(z.record(z.string(), z.unknown())),
  resource: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()),
});

/**
 * A tool's outputSchema: every field of its REST twin's documented success answers (a receipt or an
 * envelope...) and of a refusal (the typed error body, x402's PaymentRequired), each optional, a field two
 * of them share typed as either. MCP wants one object schema, and clients check even a refusal's
 * structuredContent against it; an answer that is not an object is carried as `value`.
 */
export function toolOutputSchema(answers: ZodType[]): z.ZodObject | undefined {
  if (answers.length === 0) return undefined;
  const objects = [...answers.map((a) => (a instanceof z.ZodObject ? a : z.object({ value: a }))), REFUSAL];
  const fields = new Map<string, ZodType[]>();
  for (const o of objects) for (const [k, v] of Object.entries(o.shape as Record<string, ZodType>)) fields.set(k, [...(fields.get(k) ?? []), v]);
  const shape = Object.fromEntries([...fields].map(([k, types]) => [k, (types.length === 1 ? types[0]! : z.union(types as [ZodType, ZodType, ...ZodType[]])).optional()]));
  return z.object(shape).passthrough().describe("a success: the REST twin's answer; a refusal (isError): the typed error body, or x402's PaymentRequired");
}

export function buildTools(
  ctx: ServiceContext<"fees" | "idempotency" | "treasuries">,
  services: Services,
  gatewayStatus: () => unknown,
  restAnswers: (method: string, path: string) => ZodType[] = () => [],
): ToolDefinition[] {
  /** run a state-changing call through the same idempotency guard as REST */
  const guarded = async (operation: string, scope: string, args: Record<string, unknown>, run: () => Promise<{ status: number; body: unknown }>) => {
    const body = bodyOf(args);
    const outcome = await idempotent(
      ctx.stores.idempotency,
      { scope, key: args.idempotency_key as string | undefined, fingerprint: requestFingerprint(operation, body), now: ctx.clock.now() },
      async () => {
        try {
          const r = await run();
          return { status: r.status, headers: {}, body: JSON.stringify(r.body) };
        } catch (err) {
          if (err instanceof ApiError && statusOf(err) < 500) {
            return { status: statusOf(err), headers: err.headers, body: JSON.stringify({ error: err.code, message: err.message, ...err.fields }) };
          }
          throw err;
        }
      },
    );
    const parsed = JSON.parse(outcome.body) as Record<string, unknown>;
    if (outcome.status >= 400) {
      // a stored refusal: its code is one of the table's (it was made from one)
      throw new ApiError(isErrorCode(parsed.error) ? parsed.error : "internal_error", String(parsed.message), Object.fromEntries(Object.entries(parsed).filter(([k]) => k !== "error" && k !== "message")));
    }
    return { ...parsed, http_status: outcome.status, idempotent_replayed: outcome.replayed };
  };

  const actionTool = (action: TreasuryAction, path: string, schema: { shape: ZodRawShape }, description: string): ToolDefinition => ({
    name: `prepare_${action}`,
    title: `Prepare a ${action}`,
    description,
    inputSchema: { ...schema.shape, idempotency_key: idempotencyKey },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    authenticated: true,
    rest: `POST ${path}`,
    run: async (args, tc) => {
      const credential = await tc.credential();
      return guarded(`POST ${path}`, credential.scope, args, async () => {
        const body = bodyOf(args) as { amount?: number; amount_usdc?: number; allocation?: { btc: number; eth: number }; target?: "btc" | "eth"; purpose?: string };
        const params: Record<string, unknown> = {};
        if (body.allocation) params.allocation = body.allocation;
        if (body.target) params.target = body.target;
        if (body.purpose) params.purpose = body.purpose;
        return services.actions.perform(credential.treasuryId, { action, amountMicro: resolveAmount(body.amount, body.amount_usdc), params }, "mcp_request");
      });
    },
  });

  const tools: ToolDefinition[] = [
    {
      name: "get_market_rates",
      title: "Market borrow rates",
      description: "Variable borrow APY of native USDC on Aave V3 (Ethereum, Arbitrum, Base), read from each Pool; each entry says whether it is live, cached or unavailable.",
      inputSchema: {},
      annotations: { ...readOnly, openWorldHint: true },
      authenticated: false,
      rest: "GET /api/v1/public/market-rates",
      run: async () => services.marketRates.document(),
    },
    {
      name: "get_liquidation_distance",
      title: "Liquidation distance",
      description: "How far BTC/ETH prices can fall before a position at the given LTV (1 to 75, default 40) is liquidated.",
      inputSchema: { ltv: z.number().min(1).max(75).optional().describe("loan-to-value in percent, default 40") },
      annotations: readOnly,
      authenticated: false,
      rest: "GET /api/v1/public/liquidation-distance",
      run: async (args) => liquidationDistanceDocument((args.ltv as number | undefined) ?? 40),
    },
    {
      name: "get_fee_schedule",
      title: "Fee schedule",
      description: "Service fees: 2% on deposits and conversions, the cycle fee on borrows (2% at launch, ratcheting down with volume), 0 on every downward leg.",
      inputSchema: {},
      annotations: readOnly,
      authenticated: false,
      rest: "GET /fees.json",
      run: async () => feeScheduleDocument(await ctx.stores.fees.ratchet(), ctx.links.url("/fees.json")),
    },
    {
      name: "get_gateway_status",
      title: "Gateway status",
      description: "Whether the gateway is online and which assets it supports.",
      inputSchema: {},
      annotations: readOnly,
      authenticated: false,
      rest: "GET /api/v1/public/gateway-status",
      run: async () => gatewayStatus(),
    },
    {
      name: "preview_action",
      title: "Preview an action",
      description:
        "Fee, LTV before and after and health score of an action on the demo portfolio (or the sandbox treasury of `address`). Refused with ltv_limit_exceeded and a safe_amount when it would pass the ceiling.",
      inputSchema: PreviewRequest.shape,
      annotations: readOnly,
      authenticated: false,
      rest: "POST /api/v1/public/preview",
      run: async (args) => {
        const body = PreviewRequest.parse(args);
        return services.preview.previewFor((await resolveSubject(ctx, body.address)), { action: body.action, amountMicro: resolveAmount(body.amount, body.amount_usdc), currentLtv: body.current_ltv });
      },
    },
    {
      name: "create_sandbox_treasury",
      title: "Create a sandbox treasury",
      description:
        "Register a sandbox treasury for a wallet (default: Base, balanced preset, wallet execution mode). Returns the treasury and its sandbox API key, shown once: send it as `Authorization: Bearer <key>` on later MCP requests.",
      inputSchema: CreateTreasuryRequest.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      authenticated: false,
      rest: "POST /api/v1/treasuries",
      run: async (args) => services.treasuries.create(CreateTreasuryRequest.parse(args)),
    },
    {
      name: "get_treasury_schema",
      title: "Treasury presets and definitions",
      description: "Presets (LTV bands, ceilings, park targets) and the formulas behind every figure.",
      inputSchema: {},
      annotations: readOnly,
      authenticated: false,
      rest: "GET /api/v1/treasuries",
      run: async () => treasuryCreateSchemaDocument(),
    },
    {
      name: "get_policy_state",
      title: "Policy state",
      description:
        "The policy state (LTV bands, protection authority, delegation, dormancy clock, gas caps): of the authenticated treasury when the request carries a key, else of the public demo or of `address`.",
      inputSchema: { address: z.string().regex(/^(demo|0x[0-9a-fA-F]{40})$/).optional().describe("'demo' or a wallet with a sandbox treasury; ignored with a key") },
      annotations: readOnly,
      authenticated: false,
      rest: "GET /api/v1/policy-state (with a key) or GET /api/v1/public/policy-state",
      run: async (args, tc) => {
        const credential = await tc.optionalCredential();
        if (credential) return services.policy.forTreasury((await services.actions.treasury(credential.treasuryId)));
        return services.policy.forSubject((await resolveSubject(ctx, args.address as string | undefined)));
      },
    },
    {
      name: "estimate_action",
      title: "Estimate an action",
      description: "Fee, net amount and LTV effect of a deposit, convert, borrow or repay on the authenticated treasury; changes nothing. Refused with ltv_limit_exceeded above the ceiling.",
      inputSchema: EstimateRequest.shape,
      annotations: readOnly,
      authenticated: true,
      rest: "POST /api/v1/estimate",
      run: async (args, tc) => {
        const credential = await tc.credential();
        const body = EstimateRequest.parse(args);
        if (body.action === "convert" && !body.target) throw new ApiError("invalid_request", "target (btc or eth) is required when action is convert");
        const treasury = await services.actions.treasury(credential.treasuryId);
        const chain = chainAsPosition(await services.actions.chainPosition(treasury));
        return services.preview.estimate(treasury, body.action, resolveAmount(body.amount, body.amount_usdc), body.target, chain);
      },
    },
    actionTool("deposit", "/api/v1/deposits", DepositRequest, "Deposit USDC (minimum 100; 2% fee). Wallet-mode treasuries get an unsigned envelope of real Aave V3 calls to sign and relay; managed ones execute in simulation."),
    actionTool("convert", "/api/v1/convert", ConvertRequest, "Convert idle USDC into BTC or ETH collateral (2% fee). Wallet mode: fee, approval, Uniswap V3 swap, approval, Aave supply."),
    actionTool("borrow", "/api/v1/borrow", BorrowRequest, "Borrow USDC against BTC/ETH collateral (cycle fee). Refused with ltv_limit_exceeded and a safe_amount above the ceiling, before any envelope exists."),
    actionTool("repay", "/api/v1/repay", RepayRequest, "Repay USDC debt from idle USDC (free; at most the debt is repaid). Wallet mode: USDC approval, then Aave repay at the variable rate."),
    {
      name: "relay_signed_transaction",
      title: "Relay a signed transaction",
      description:
        "Relay one signed step of an envelope (legacy, EIP-2930 or EIP-1559). Accepted only if the treasury's wallet signed exactly the step's to, data, value and chain id; steps go in order.",
      inputSchema: { ...RelayRequest.shape, idempotency_key: idempotencyKey },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      authenticated: false,
      rest: "POST /api/v1/relay",
      run: async (args) => {
        const body = RelayRequest.parse(bodyOf(args));
        // the same scope as REST: the transaction's signer, so callers cannot collide on keys
        return guarded("POST /api/v1/relay", await relayScope(body.tx_id, body.signed_transaction), args, async () =>
          services.relay.relay(body.tx_id, body.signed_transaction as `0x${string}`),
        );
      },
    },
    {
      name: "get_health",
      title: "Treasury health",
      description: "Health score, LTV, LTV zone and zone bounds of the authenticated treasury.",
      inputSchema: {},
      annotations: readOnly,
      authenticated: true,
      rest: "GET /api/v1/health",
      run: async (_args, tc) => services.treasuries.healthView((await services.actions.treasury((await tc.credential()).treasuryId))),
    },
    {
      name: "get_treasury_state",
      title: "Treasury state",
      description: "Holdings, value, debt, LTV, health and utilization of the authenticated treasury.",
      inputSchema: {},
      annotations: readOnly,
      authenticated: true,
      rest: "GET /api/v1/treasury",
      run: async (_args, tc) => services.treasuries.stateView((await services.actions.treasury((await tc.credential()).treasuryId))),
    },
    {
      name: "request_live_access",
      title: "Request live access",
      description:
        "Ask for live (real-money) access. A human reviews every request (typically within 2 business days) and contacts the operator; poll the returned status_url.",
      inputSchema: AccessRequestBody.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      authenticated: false,
      rest: "POST /api/v1/agents/apply",
      run: async (args) => services.access.submit(AccessRequestBody.parse(args)),
    },
  ];
  // a tool whose REST twin has an x402 price is paid like it (derived from the price list, never restated)
  for (const tool of tools) {
    const twin = /^(GET|POST) (\S+)$/.exec(tool.rest);
    if (twin && services.prices.for(twin[1]!, twin[2]!)) tool.paid = { method: twin[1] as "GET" | "POST", path: twin[2]! };
    tool.outputSchema = toolOutputSchema([...tool.rest.matchAll(/(GET|POST) (\/\S+)/g)].flatMap((m) => restAnswers(m[1]!, m[2]!)));
  }
  return tools;
}
