/** Helpers to create treasuries and call authenticated routes in tests. */
import { randomBytes } from "node:crypto";
import { call, type JsonResponse } from "./gateway";

export const newIdempotencyKey = () => `idem-${randomBytes(12).toString("hex")}`;

export interface Tenant {
  key: string;
  treasuryId: string;
  wallet: string;
}

export async function registerTreasury(base: string, body: Record<string, unknown>): Promise<Tenant> {
  const r = await call(base, "POST", "/api/v1/treasuries", { body });
  if (r.status !== 200) throw new Error(`treasury creation failed: ${r.text}`);
  return { key: r.body.api_key, treasuryId: r.body.treasury_id, wallet: r.body.wallet_address };
}

export async function sandboxTenant(base: string): Promise<Tenant> {
  const r = await call(base, "POST", "/api/v1/sandbox/keys");
  const t = await call(base, "GET", `/api/v1/treasuries/${r.body.treasury_id}`);
  return { key: r.body.key, treasuryId: r.body.treasury_id, wallet: t.body.wallet_address };
}

export function authed(base: string, key: string) {
  return {
    get: (path: string): Promise<JsonResponse> => call(base, "GET", path, { headers: { authorization: `Bearer ${key}` } }),
    post: (path: string, body: unknown, idempotencyKey: string | null = newIdempotencyKey()): Promise<JsonResponse> =>
      call(base, "POST", path, {
        body,
        headers: { authorization: `Bearer ${key}`, ...(idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey }) },
      }),
  };
}
