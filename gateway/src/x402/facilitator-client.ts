/**
 * Which facilitator verifies and settles: chosen by X402_FACILITATOR.
 *   local  (default) the project's own facilitator at X402_FACILITATOR_URL (see facilitator/)
 *   public the public Base Sepolia facilitator (https://x402.org/facilitator, or X402_FACILITATOR_URL)
 *   cdp    Coinbase's CDP facilitator through @coinbase/x402, keys CDP_API_KEY_ID / CDP_API_KEY_SECRET
 * All three speak the same x402 v1 HTTP API. The client is x402's `useFacilitator` made over Node's own
 * HTTP client with kept-alive connections (packages/core/src/lib/keep-alive-post.ts): the same requests (POST /verify and /settle, the same JSON body
 * through x402's toJsonSafe, the same auth headers), the same answers and errors (VerifyError,
 * SettleError). x402's calls `fetch`, whose request and stream objects were a fifth of the gateway's CPU
 * on a paid request in the bench's profile (bench/README.md, item 25).
 */
import { createFacilitatorConfig } from "@coinbase/x402";
import { toJsonSafe } from "x402/shared";
import { keepAlivePost } from "@treasury/core/lib/keep-alive-post";
import { TreasuryError } from "@treasury/core/lib/errors";
import {
  SettleError,
  VerifyError,
  type FacilitatorConfig,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  type VerifyResponse,
} from "x402/types";

export type FacilitatorMode = "local" | "public" | "cdp";

export const PUBLIC_FACILITATOR_URL = "https://x402.org/facilitator";
export const DEFAULT_LOCAL_FACILITATOR_URL = "http://127.0.0.1:4021";

export function facilitatorConfig(
  mode: FacilitatorMode,
  url: string | undefined,
  cdp: { keyId?: string; keySecret?: string },
  localApiKey?: string,
): FacilitatorConfig {
  switch (mode) {
    case "local": {
      // the local facilitator answers only its gateway when it has an API key (facilitator/server.ts)
      const auth = localApiKey ? { Authorization: `Bearer ${localApiKey}` } : undefined;
      return {
        url: (url ?? DEFAULT_LOCAL_FACILITATOR_URL) as `${string}://${string}`,
        ...(auth ? { createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }) } : {}),
      };
    }
    case "public":
      return { url: (url ?? PUBLIC_FACILITATOR_URL) as `${string}://${string}` };
    case "cdp":
      if (!cdp.keyId || !cdp.keySecret) throw new Error("X402_FACILITATOR=cdp needs CDP_API_KEY_ID and CDP_API_KEY_SECRET");
      return createFacilitatorConfig(cdp.keyId, cdp.keySecret);
  }
}

/** how long a facilitator call may take before it fails, by default (x402's fetch had no limit; X402_FACILITATOR_TIMEOUT_MS) */
export const FACILITATOR_TIMEOUT_MS = 30_000;

/** one POST of JSON, its status and parsed answer (an answer that is not JSON is an error, as `res.json()` throws) */
async function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ status: number; statusText: string; data: unknown }> {
  const res = await keepAlivePost(url, headers, body, { timeoutMs });
  return { status: res.status, statusText: res.statusText, data: JSON.parse(res.text) };
}

export interface FacilitatorClient {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
}

export function facilitatorClient(config: FacilitatorConfig, timeoutMs = FACILITATOR_TIMEOUT_MS): FacilitatorClient {
  /** one call, answered as useFacilitator answers it: the body when it carries `field`, its typed error when not 200, else an error */
  const call = async <T>(
    what: "verify" | "settle",
    field: string,
    refused: (status: number, body: T) => Error,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<T> => {
    let headers: Record<string, string> = { "Content-Type": "application/json" };
    if (config.createAuthHeaders) headers = { ...headers, ...(await config.createAuthHeaders())[what] };
    const body = JSON.stringify({ x402Version: payload.x402Version, paymentPayload: toJsonSafe(payload), paymentRequirements: toJsonSafe(requirements) });
    const res = await postJson(`${config.url}/${what}`, headers, body, timeoutMs);
    const data = typeof res.data === "object" && res.data !== null ? res.data : undefined;
    if (data && field in data) {
      if (res.status !== 200) throw refused(res.status, data as T);
      return data as T;
    }
    // a 400 without the field: the facilitator refused the request's content (the proof), it is not out of service
    if (data && res.status === 400) throw refused(res.status, { [field]: false, ...data } as T);
    throw new Error(`Failed to ${what} payment: ${res.status} ${res.statusText}`);
  };
  return {
    verify: (payload, requirements) => call<VerifyResponse>("verify", "isValid", (status, r) => new VerifyError(status, r), payload, requirements),
    settle: (payload, requirements) => call<SettleResponse>("settle", "success", (status, r) => new SettleError(status, r), payload, requirements),
  };
}

/** the facilitator could not be reached, or answered out of service: the typed 503 (nothing was charged) */
export const facilitatorUnavailable = (): TreasuryError =>
  new TreasuryError(
    "payment_facilitator_unavailable",
    "the x402 facilitator could not be reached; retry later (nothing was charged)",
    {},
    { "Retry-After": "5" },
  );

/**
 * A proof verified by the facilitator, for every scheme alike: its answer, or `refused` with its reason when the
 * facilitator refused the proof itself (a 4xx answer: the client's error, a 402); an outage (no answer, a 5xx)
 * throws the typed 503.
 */
export async function verifyPayment(
  facilitator: FacilitatorClient,
  payment: PaymentPayload,
  requirements: PaymentRequirements,
): Promise<{ verified: VerifyResponse; refused?: undefined } | { refused: { reason: string | undefined } }> {
  try {
    return { verified: await facilitator.verify(payment, requirements) };
  } catch (err) {
    if (err instanceof VerifyError && err.statusCode >= 400 && err.statusCode < 500) return { refused: { reason: err.invalidReason } };
    throw facilitatorUnavailable();
  }
}
