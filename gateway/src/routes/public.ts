/** Public, no-auth endpoints (spec 4.3). */
import { SafetyRailError } from "../schemas/common";
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
import type { ServiceContext } from "../services/context";
import type { gatewayStatusDocument } from "../services/gateway-status";
import { liquidationDistanceDocument } from "../services/liquidation-distance";
import type { MarketRatesService } from "../services/market-rates";
import type { PolicyService } from "../services/policy-service";
import { resolveAmount, type PreviewService } from "../services/preview-service";
import { resolveSubject } from "../services/subject";
import type { TreasuryService } from "../services/treasury-service";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

export interface PublicDeps {
  marketRates: MarketRatesService;
  policy: PolicyService;
  preview: PreviewService;
  treasuries: TreasuryService;
  /** the gateway status document (spec 2.17) */
  status: () => ReturnType<typeof gatewayStatusDocument>;
}

export function publicRoutes(kit: RouteKit, ctx: ServiceContext<"treasuries">, deps: PublicDeps): void {
  const tags = ["Public"];

  kit.route({
    method: "get",
    path: "/api/v1/public/market-rates",
    operationId: "getMarketRates",
    summary: "Native-USDC variable borrow APY of Aave V3 on three chains",
    description: "Read from each chain's Aave V3 Pool over its configured RPC. `environment` is `live` only when every entry was read from its chain within the cache window.",
    tags,
    responses: { 200: { description: "market rates (spec 2.13)", schema: MarketRates }, ...RATE_LIMITED },
    handler: async () => ({ status: 200, body: await deps.marketRates.document() }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/liquidation-distance",
    operationId: "getLiquidationDistance",
    summary: "Collateral price drop that would bring a position at an LTV to liquidation",
    tags,
    request: { query: LiquidationDistanceQuery },
    responses: {
      200: { description: "liquidation distance (spec 2.14)", schema: LiquidationDistance },
      400: err("ltv outside 1 to 75 or not a number"),
      ...RATE_LIMITED,
    },
    handler: ({ query }) => ({ status: 200, body: liquidationDistanceDocument(query.ltv ?? 40) }),
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
    handler: async ({ query }) => {
      const subject = await resolveSubject(ctx, query.address);
      return { status: 200, body: await deps.treasuries.portfolioView(subject.holdings, subject.environment, subject.address) };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/policy-state",
    operationId: "getPublicPolicyState",
    summary: "Policy state of the demo, or of the proven treasury of an address",
    tags,
    request: { query: AddressQuery },
    responses: {
      200: { description: "policy state (spec 2.12)", schema: PolicyState },
      400: err("invalid address"),
      404: err("no proven treasury for the address (a registration without an ownership proof is never shown by address)"),
      ...RATE_LIMITED,
    },
    handler: async ({ query }) => ({ status: 200, body: await deps.policy.forSubject((await resolveSubject(ctx, query.address))) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/public/gateway-status",
    operationId: "getGatewayStatus",
    summary: "Gateway status",
    tags,
    responses: { 200: { description: "gateway status (spec 2.17)", schema: GatewayStatus }, ...RATE_LIMITED },
    handler: async () => ({ status: 200, body: await deps.status() }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/public/preview",
    operationId: "previewAction",
    summary: "Typed preview of an action: fee, LTV before and after, safety rail",
    description:
      "`amount` is the USDC value of the action (`amount_usdc` is an alias; both present must be equal). With `address`, the preview runs on the sandbox treasury registered for it; otherwise on the demo portfolio. `current_ltv` restates the debt against that collateral.",
    tags,
    request: { body: PreviewRequest },
    responses: {
      200: { description: "action preview (spec 2.3)", schema: ActionPreview },
      400: err("invalid body"),
      403: { description: "safety rail (spec 2.2): the action would exceed the ceiling", schema: SafetyRailError },
      404: err("no proven treasury for the address (a registration without an ownership proof is never shown by address)"),
      ...RATE_LIMITED,
    },
    handler: async ({ body }) => {
      const subject = await resolveSubject(ctx, body.address);
      const amountMicro = resolveAmount(body.amount, body.amount_usdc);
      return { status: 200, body: await deps.preview.previewFor(subject, { action: body.action, amountMicro, currentLtv: body.current_ltv }) };
    },
  });
}
