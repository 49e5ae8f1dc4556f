/**
 * The spec's sandbox flow as a client that knows only the spec makes it:
 * register a treasury for a brand-new wallet (with the wallet's ownership
 * proof, the one extension it uses: the sandbox prepares the one-signature
 * envelope ahead only for a registration that proved its wallet; without it,
 * test/e2e/unproven-wallet-loop.test.ts), deposit, convert, borrow over
 * the ceiling then `safe_amount`, repay; in wallet mode each 202 envelope's
 * one `unsigned_transaction` is signed as viem fills it (nonce and gas from
 * the chain) and relayed under the envelope's `tx_id`. Used against a test
 * gateway (test/e2e/sandbox-flow.test.ts) and against `npm start`'s stack
 * (test/e2e/readme.test.ts).
 */
import { randomBytes } from "node:crypto";
import { createWalletClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { expect } from "vitest";
import { call, type JsonResponse } from "./gateway";

export const freshKey = () => `sbx-${randomBytes(12).toString("hex")}`;

export interface FlowClient {
  gatewayUrl: string;
  rpcUrl: string;
  /** a check of every answer (the OpenAPI validator), optional */
  check?: (method: string, path: string, r: JsonResponse) => void;
}

/**
 * One request of the flow, as a well-behaved client sends it: a 429 (the stack's default write budget of 20 a
 * minute per unproven client address, which every relay from this machine shares) is waited out for its
 * Retry-After and sent again, the same request with the same Idempotency-Key, at most twice.
 */
export async function specRequest(c: FlowClient, method: string, path: string, opts: Parameters<typeof call>[3] = {}) {
  let r = await call(c.gatewayUrl, method, path, opts);
  for (let retry = 0; r.status === 429 && retry < 2; retry++) {
    c.check?.(method, path, r);
    const wait = Number(r.headers.get("retry-after") ?? r.body?.retry_after_seconds ?? 1);
    await new Promise((done) => setTimeout(done, (wait + 0.5) * 1000));
    r = await call(c.gatewayUrl, method, path, opts);
  }
  c.check?.(method, path, r);
  return r;
}

/**
 * Register a brand-new wallet with its ownership proof (the statement from
 * GET /api/v1/treasuries/ownership-statement, signed by the wallet): the
 * sandbox's chain tools (funding, impersonated managed runs, provided steps)
 * act only for a registration that proved its wallet (docs/SECURITY.md,
 * invariant 12).
 */
export async function registerNew(c: FlowClient, mode: "wallet" | "managed") {
  const account = privateKeyToAccount(generatePrivateKey());
  const q = new URLSearchParams({ wallet_address: account.address, chain: "base", execution_mode: mode });
  const statement = await specRequest(c, "GET", `/api/v1/treasuries/ownership-statement?${q}`);
  expect(statement.status).toBe(200);
  const ownership_proof = {
    signature: await account.signTypedData(statement.body.typed_data),
    nonce: statement.body.nonce,
    issued_at: statement.body.issued_at,
  };
  const r = await specRequest(c, "POST", "/api/v1/treasuries", { body: { wallet_address: account.address, execution_mode: mode, ownership_proof } });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ object: "treasury", execution_mode: mode, status: "active", ownership: "proven" });
  const apiKey = r.body.api_key as string;
  const act = (path: string, body: Record<string, unknown>) =>
    specRequest(c, "POST", path, { body, headers: { authorization: `Bearer ${apiKey}`, "idempotency-key": freshKey() } });
  return { account, act, apiKey, treasuryId: r.body.treasury_id as string };
}

/** sign the envelope's unsigned_transaction as viem fills it and relay it under the envelope's tx_id */
export async function signAndRelay(
  c: FlowClient,
  account: PrivateKeyAccount,
  envelope: { tx_id: string; unsigned_transaction: { to: Hex; data: Hex; value: string } },
  opts: { thinkMs?: number } = {},
) {
  const wallet = createWalletClient({ account, chain: base, transport: http(c.rpcUrl) });
  const u = envelope.unsigned_transaction;
  const request = await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value) });
  const signed = await wallet.signTransaction(request);
  // a signer that takes its time (a person, a hardware wallet): the estimate must still hold when it is mined
  if (opts.thinkMs) await new Promise((r) => setTimeout(r, opts.thinkMs));
  const res = await specRequest(c, "POST", "/api/v1/relay", {
    body: { tx_id: envelope.tx_id, signed_transaction: signed },
    headers: { "idempotency-key": freshKey() },
  });
  return Object.assign(res, { signed });
}

/** the whole flow in one mode; returns the final answers of each step */
export async function specSandboxFlow(c: FlowClient, mode: "wallet" | "managed") {
  const t = await registerNew(c, mode);
  const done = async (path: string, body: Record<string, unknown>) => {
    const r = await t.act(path, body);
    if (mode === "managed") {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    }
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const relayed = await signAndRelay(c, t.account, r.body);
    expect(relayed.status, JSON.stringify(relayed.body)).toBe(200);
    expect(relayed.body).toMatchObject({ object: "relay_receipt", tx_id: r.body.tx_id, simulated: false, status: "confirmed" });
    return relayed.body;
  };
  const deposit = await done("/api/v1/deposits", { amount_usdc: 1000 });
  const convert = await done("/api/v1/convert", { amount_usdc: 500, target: "eth" });
  const over = await t.act("/api/v1/borrow", { amount_usdc: 100000 });
  expect(over.status).toBe(403);
  expect(over.body).toMatchObject({ error: "ltv_limit_exceeded", allowed: false, approved: false });
  const borrow = await done("/api/v1/borrow", { amount_usdc: over.body.safe_amount });
  const repay = await done("/api/v1/repay", { amount_usdc: 100 });
  return { ...t, deposit, convert, over: over.body, borrow, repay };
}

/**
 * The wallet loop for a wallet that has proven nothing, with the specification's fields alone: registered with
 * `wallet_address` only, a deposit's 202 envelope, each of its steps signed with viem (the wallet holds no ETH:
 * nonce and gas given) and relayed under its own tx_id; returns the last relay's answer.
 */
export async function specUnprovenWalletDeposit(c: FlowClient, amountUsdc: number) {
  const account = privateKeyToAccount(generatePrivateKey());
  const reg = await specRequest(c, "POST", "/api/v1/treasuries", { body: { wallet_address: account.address } });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const env = await specRequest(c, "POST", "/api/v1/deposits", {
    body: { amount_usdc: amountUsdc },
    headers: { authorization: `Bearer ${reg.body.api_key}`, "idempotency-key": freshKey() },
  });
  expect(env.status, JSON.stringify(env.body)).toBe(202);
  const wallet = createWalletClient({ account, chain: base, transport: http(c.rpcUrl) });
  let last: JsonResponse | undefined;
  for (const [nonce, step] of (env.body.steps as { tx_id: string; unsigned_transaction: { to: Hex; data: Hex; value: string } }[]).entries()) {
    const u = step.unsigned_transaction;
    const signed = await wallet.signTransaction(
      await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), nonce, gas: 500_000n }),
    );
    last = await specRequest(c, "POST", "/api/v1/relay", {
      body: { tx_id: step.tx_id, signed_transaction: signed },
      headers: { "idempotency-key": freshKey() },
    });
    expect(last.status, JSON.stringify(last.body)).toBe(200);
  }
  return { account, receipt: last!.body };
}
