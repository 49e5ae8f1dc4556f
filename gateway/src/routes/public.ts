/** Public, no-auth endpoints (spec 4.3). */
import { SafetyRailError } from "@treasury/core/schemas/common";
import {
  ActionPreview,
  AddressQuery,
  GatewayStatus,
  LiquidationDistance,
  LiquidationDistanceQuery,
  MarketRates,
  PolicyState,
  PortfolioState,
  PreviewRequest,
} from "../schemas/public";
import { JsonText } from "../http/json-response";
import { liquidationDistanceDocument } from "../services/liquidation-distance";
import type { MarketRatesService } from "../services/market-rates";
import type { PolicyService } from "../services/policy-service";
import { resolveAmount, type PreviewService } from "../services/preview-service";
import type { TreasuryService } from "../services/treasury-service";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

export interface PublicDeps {
  marketRates: MarketRatesService;
  policy: PolicyService;
  preview: PreviewService;
  treasuries: TreasuryService;
  /** the gateway status document (spec 2.17), as its JSON text (services/gateway-status.ts) */
  status: () => Promise<string>;
}

/** how many liquidation-distance texts are kept (one per LTV asked) */
export const LIQUIDATION_TEXTS = 256;

export function publicRoutes(kit: RouteKit, deps: PublicDeps): void {
  /**
   * The liquidation-distance document is a function of the LTV alone: its text is kept per LTV asked, at most
   * LIQUIDATION_TEXTS of them (the set starts over when full), instead of built and serialized per request.
   */
  const liquidationTexts = new Map<number, JsonText>();
  const liquidationText = (ltv: number): JsonText => {
    let text = liquidationTexts.get(ltv);
    if (!text) {
      if (liquidationTexts.size >= LIQUIDATION_TEXTS) liquidationTexts.clear();
      text = new JsonText(JSON.stringify(liquidationDistanceDocument(ltv)));
      liquidationTexts.set(ltv, text);
    }
    return text;
  };
  const tags = ["Public"];

  kit.route({
    method: "get",
    path: "/api/v1/public/market-rates",
    operationId: "getMarketRates",
    summary: "Native-USDC variable borrow APY of Aave V3 on three chains",
    description:
      "Read from each chain's Aave V3 Pool over its configured RPC. `environment` is `live` only when every entry was read from its chain within the cache window.",
    tags,
    tool: {
      name: "get_market_rates",
      title: "Market borrow rates",
      description:
        "Variable borrow APY of native USDC on Aave V3 (Ethereum, Arbitrum, Base), read from each Pool; each entry says whether it is live, cached or unavailable.",
      openWorld: true,
    },
    responses: { 200: { description: "market rates (spec 2.13)", schema: MarketRates }, ...RATE_LIMITED },
    handler: async () => ({ status: 200, body: await deps.marketRates.document() }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/liquidation-distance",
    operationId: "getLiquidationDistance",
    summary: "Collateral price drop that would bring a position at an LTV to liquidation",
    tags,
    tool: {
      name: "get_liquidation_distance",
      title: "Liquidation distance",
      description: "How far BTC/ETH prices can fall before a position at the given LTV (1 to 75, default 40) is liquidated.",
    },
    request: { query: LiquidationDistanceQuery },
    responses: {
      200: { description: "liquidation distance (spec 2.14)", schema: LiquidationDistance },
      400: err("ltv outside 1 to 75 or not a number"),
      ...RATE_LIMITED,
    },
    handler: ({ query }) => ({ status: 200, body: liquidationText(query.ltv ?? 40) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/portfolio-state",
    operationId: "getPortfolioState",
    summary: "Portfolio state of the demo, or of the proven treasury of an address",
    tags,
    request: { query: AddressQuery },
    responses: {
      200: { description: "portfolio state (spec 2.18)", schema: PortfolioState },
      400: err("invalid address"),
      404: err("no proven treasury for the address (a registration without an ownership proof is never shown by address)"),
      ...RATE_LIMITED,
    },
    errors: ["treasury_not_found"],
    handler: async ({ query }) => {
      const subject = await deps.treasuries.subject(query.address);
      return { status: 200, body: await deps.treasuries.portfolioView(subject.holdings, subject.environment, subject.address) };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/policy-state",
    operationId: "getPublicPolicyState",
    summary: "Policy state of the demo, or of the proven treasury of an address",
    tags,
    tool: {
      name: "get_policy_state",
      title: "Policy state",
      description:
        "The policy state (LTV bands, protection authority, delegation, dormancy clock, gas caps): of the authenticated treasury when the request carries a key, else of the public demo or of `address`.",
      withKey: "/api/v1/policy-state",
    },
    request: { query: AddressQuery },
    responses: {
      200: { description: "policy state (spec 2.12)", schema: PolicyState },
      400: err("invalid address"),
      404: err("no proven treasury for the address (a registration without an ownership proof is never shown by address)"),
      ...RATE_LIMITED,
    },
    errors: ["treasury_not_found"],
    handler: async ({ query }) => ({ status: 200, body: await deps.policy.forSubject(await deps.treasuries.subject(query.address)) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/gateway-status",
    operationId: "getGatewayStatus",
    summary: "Gateway status",
    tags,
    tool: { name: "get_gateway_status", title: "Gateway status", description: "Whether the gateway is online and which assets it supports." },
    responses: { 200: { description: "gateway status (spec 2.17)", schema: GatewayStatus }, ...RATE_LIMITED },
    handler: async () => ({ status: 200, body: new JsonText(await deps.status()) }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/public/preview",
    operationId: "previewAction",
    tool: {
      name: "preview_action",
      title: "Preview an action",
      description:
        "Fee, LTV before and after and health score of an action on the demo portfolio (or the sandbox treasury of `address`). Refused with ltv_limit_exceeded and a safe_amount when it would pass the ceiling.",
      readOnly: true,
    },
    summary: "Typed preview of an action: fee, LTV before and after, safety rail",
    description:
      "`amount` is the USDC value of the action (`amount_usdc` is an alias; both present must be equal). With `address`, the preview runs on the sandbox treasury registered for it; otherwise on the demo portfolio. `current_ltv` restates the debt against that collateral.",
    tags,
    request: { body: PreviewRequest, example: { action: "borrow", amount: 500 } },
    responses: {
      200: { description: "action preview (spec 2.3)", schema: ActionPreview },
      400: err("invalid body"),
      403: { description: "safety rail (spec 2.2): the action would exceed the ceiling", schema: SafetyRailError },
      404: err("no proven treasury for the address (a registration without an ownership proof is never shown by address)"),
      ...RATE_LIMITED,
    },
    errors: ["ltv_limit_exceeded", "treasury_not_found"],
    handler: async ({ body }) => {
      const subject = await deps.treasuries.subject(body.address);
      const amountMicro = resolveAmount(body.amount, body.amount_usdc);
      return { status: 200, body: await deps.preview.previewFor(subject, { action: body.action, amountMicro, currentLtv: body.current_ltv }) };
    },
  });
}
