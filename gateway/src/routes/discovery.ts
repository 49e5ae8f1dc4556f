/** GET /agents.json, GET /fees.json (spec 2.15, 2.16, 4.2). */
import { FREE_ACTIONS } from "@treasury/core/actions";
import { feeScheduleDocument, type RatchetState } from "@treasury/core/domain/fee-schedule";
import { JsonText } from "../http/json-response";
import { SUPPORTED_ASSETS } from "@treasury/core/domain/assets";
import { AgentDiscovery, FeeSchedule } from "../schemas/discovery";
import type { Runtime } from "../services/context";
import type { PreviewService } from "../services/preview-service";
import { RATE_LIMITED, type RouteKit } from "./kit";

export function discoveryRoutes(kit: RouteKit, ctx: Runtime, preview: PreviewService): void {
  const { url } = ctx.links;
  /** the schedule is a function of the ratchet, read from the store on every request: its text is kept for the state last read */
  let schedule: { tierIndex: number; volume: bigint; text: JsonText } | undefined;
  const feeSchedule = (ratchet: RatchetState): JsonText => {
    if (schedule?.tierIndex !== ratchet.tierIndex || schedule.volume !== ratchet.platformVolumeMicro) {
      schedule = {
        tierIndex: ratchet.tierIndex,
        volume: ratchet.platformVolumeMicro,
        text: new JsonText(JSON.stringify(feeScheduleDocument(ratchet, url("/fees.json"), FREE_ACTIONS))),
      };
    }
    return schedule.text;
  };

  kit.route({
    method: "get",
    path: "/agents.json",
    operationId: "getAgentDiscovery",
    summary: "Agent discovery document",
    tags: ["Discovery"],
    responses: { 200: { description: "agent discovery (spec 2.15)", schema: AgentDiscovery }, ...RATE_LIMITED },
    handler: () => ({
      status: 200,
      body: {
        name: "Agent Treasury Gateway",
        description:
          "Treasury layer for agents holding BTC, ETH and USDC on Aave V3: preview, prepare and monitor deposits, conversions, borrows and repayments. " +
          "Wallet-sovereign agents pay per request with x402 and receive unsigned transactions; the service never holds private keys.",
        categories: ["defi", "treasury", "lending", "aave-v3", "agent-payments"],
        mcp_url: url("/api/mcp"),
        openapi_url: url("/openapi.json"),
        fees_url: url("/fees.json"),
        sandbox_url: url("/api/v1/sandbox/keys"),
        docs_url: url("/docs"),
        human_approval_required: true,
        supported_assets: SUPPORTED_ASSETS,
        supported_interfaces: ["MCP", "REST", "x402"],
        status_url: url("/api/v1/public/gateway-status"),
        trust_url: url("/api/v1/public/policy-state"),
        security_url: url("/docs#security"),
      },
    }),
  });

  kit.route({
    method: "get",
    path: "/fees.json",
    operationId: "getFeeSchedule",
    summary: "Service fee schedule with the current ratchet tier",
    tool: {
      name: "get_fee_schedule",
      title: "Fee schedule",
      description:
        "Service fees: 2% on deposits and conversions, the cycle fee on borrows (2% at launch, ratcheting down with volume), 0 on every downward leg.",
    },
    tags: ["Discovery"],
    responses: { 200: { description: "fee schedule (spec 2.16)", schema: FeeSchedule }, ...RATE_LIMITED },
    handler: async () => ({ status: 200, body: feeSchedule(await preview.ratchet()) }),
  });
}
