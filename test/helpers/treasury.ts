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

/**
 * Register a treasury with the wallet's ownership proof: fetch the statement
 * to sign from the gateway, sign it with the account (EIP-712), register.
 */
export async function registerProven(
  base: string,
  account: { address: string; signTypedData: (t: any) => Promise<`0x${string}`> },
  body: Record<string, unknown> = {},
): Promise<Tenant & { body: any }> {
  const q = new URLSearchParams({
    wallet_address: account.address,
    chain: String(body.chain ?? "base"),
    execution_mode: String(body.execution_mode ?? "wallet"),
  });
  const statement = (await call(base, "GET", `/api/v1/treasuries/ownership-statement?${q}`)).body;
  const signature = await account.signTypedData(statement.typed_data);
  const r = await call(base, "POST", "/api/v1/treasuries", {
    body: { wallet_address: account.address, ...body, ownership_proof: { signature, nonce: statement.nonce, issued_at: statement.issued_at } },
  });
  if (r.status !== 200) throw new Error(`proven registration failed: ${r.text}`);
  return { key: r.body.api_key, treasuryId: r.body.treasury_id, wallet: r.body.wallet_address, body: r.body };
}
