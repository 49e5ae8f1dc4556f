/** The gateway status document (spec 2.17), shared by REST and MCP. */
import { SUPPORTED_ASSETS } from "../domain/assets";
import { API_VERSION } from "../http/openapi";
import type { Clock } from "../lib/clock";

/** `ping` asks the store to answer (a failure is a typed 500) */
export async function gatewayStatusDocument(deps: { clock: Clock; ping: () => Promise<unknown> }, startedAt: Date, version: string) {
  const now = deps.clock.now();
  await deps.ping();
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
