/**
 * Which facilitator verifies and settles: chosen by X402_FACILITATOR.
 *   local  (default) the project's own facilitator at X402_FACILITATOR_URL (see facilitator/)
 *   public the public Base Sepolia facilitator (https://x402.org/facilitator, or X402_FACILITATOR_URL)
 *   cdp    Coinbase's CDP facilitator through @coinbase/x402, keys CDP_API_KEY_ID / CDP_API_KEY_SECRET
 * All three speak the same x402 v1 HTTP API; x402's useFacilitator is the client.
 */
import { createFacilitatorConfig } from "@coinbase/x402";
import type { FacilitatorConfig } from "x402/types";
import { useFacilitator } from "x402/verify";

export type FacilitatorMode = "local" | "public" | "cdp";

export const PUBLIC_FACILITATOR_URL = "https://x402.org/facilitator";
export const DEFAULT_LOCAL_FACILITATOR_URL = "http://127.0.0.1:4021";

export function facilitatorConfig(mode: FacilitatorMode, url: string | undefined, cdp: { keyId?: string; keySecret?: string }): FacilitatorConfig {
  switch (mode) {
    case "local":
      return { url: (url ?? DEFAULT_LOCAL_FACILITATOR_URL) as `${string}://${string}` };
    case "public":
      return { url: (url ?? PUBLIC_FACILITATOR_URL) as `${string}://${string}` };
    case "cdp":
      if (!cdp.keyId || !cdp.keySecret) throw new Error("X402_FACILITATOR=cdp needs CDP_API_KEY_ID and CDP_API_KEY_SECRET");
      return createFacilitatorConfig(cdp.keyId, cdp.keySecret);
  }
}

export function facilitatorClient(config: FacilitatorConfig) {
  return useFacilitator(config);
}
