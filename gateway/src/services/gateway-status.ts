/** The gateway status document (spec 2.17), shared by REST and MCP. */
import { SUPPORTED_ASSETS } from "../domain/assets";
import { API_VERSION } from "../http/openapi";
import type { AppContext } from "./context";

export function gatewayStatusDocument(ctx: AppContext, startedAt: Date, version: string) {
  const now = ctx.clock.now();
  ctx.db.prepare("SELECT 1").get(); // the database answers, or this throws (typed 500)
  return {
    object: "gateway_status" as const,
    status: "online",
    supported_assets: SUPPORTED_ASSETS,
    version,
    api_version: API_VERSION,
    uptime_seconds: Math.floor((now.getTime() - startedAt.getTime()) / 1000),
    execution: "simulated",
    time: now.toISOString(),
  };
}
