/**
 * The spec's sandbox flow for a brand-new wallet on the local chain, with only
 * the spec's requests (4.4, 4.5, 4.8) and the wallet's ownership proof at
 * registration (the sandbox acts on a wallet only for a registration that
 * proved it: test/security/tenant-trust.test.ts): register, deposit, convert,
 * borrow over the ceiling then `safe_amount`, repay; in wallet mode each 202 envelope's one
 * `unsigned_transaction` is signed as viem fills it (nonce and gas from the
 * chain) and relayed under the envelope's `tx_id`. The wallet is never funded
 * by the test: the sandbox provides gas ETH and test USDC on the local Anvil.
 */
import http2 from "node:http";
import type { AddressInfo } from "node:net";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aaveVersionOf } from "@treasury/core/contracts/aave-versions";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { floatArtefacts } from "../helpers/figures";
import { ResponseValidator } from "../helpers/openapi";
import { freshKey, registerNew, signAndRelay as relayOne, specRequest, type FlowClient } from "../helpers/spec-flow";

const FEE_RECIPIENT = devAccount(5).address;
let fork: BaseForkNode;
let gw: TestGateway;
let doc: ResponseValidator;

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT });
  doc = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const key = freshKey;
const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balanceOf = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });
/** every answer of this file's flows, for the scan for float noise at the end */
const answers: { route: string; body: unknown }[] = [];
/** the spec's client against this file's gateway, every answer checked against the served document */
const client = (): FlowClient => ({
  gatewayUrl: gw.url,
  rpcUrl: fork.rpcUrl,
  check: (m, p, r) => {
    answers.push({ route: `${m} ${p}`, body: r.body });
    doc.check(m, p, r.status, r.body);
  },
});
const spec = (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => specRequest(client(), method, path, opts);
const register = (mode: "wallet" | "managed") => registerNew(client(), mode);
const signAndRelay = (account: PrivateKeyAccount, envelope: Parameters<typeof relayOne>[2], opts?: Parameters<typeof relayOne>[3]) =>
  relayOne(client(), account, envelope, opts);

describe("gateway status", () => {
  it("says per chain what the running gateway does: Base broadcast to the sandbox's local chain, Arbitrum simulated", async () => {
    const r = await spec("GET", "/api/v1/public/gateway-status");
    expect(r.body).toMatchObject({
      object: "gateway_status",
      status: "online",
      execution: "mixed",
      chains: [
        {
          chain: "base",
          execution: "broadcast",
          network: "local_sandbox_chain",
          sandbox_funding: true,
          aave: { pool: AaveV3Base.POOL, pool_revision: fork.manifest.aave.pool_revision, version: aaveVersionOf(fork.manifest.aave.pool_revision) },
        },
        { chain: "arbitrum", execution: "simulated", network: "none", sandbox_funding: false, aave: null },
      ],
    });
  });
});

describe("wallet mode, one signature per action", () => {
  it("a brand-new wallet deposits, converts, borrows safe_amount after a 403, and repays; every relay is confirmed on the fork", async () => {
    const { account, act, apiKey } = await register("wallet");
    expect(await pub().getBalance({ address: account.address })).toBe(0n);
    const feeBefore = await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, FEE_RECIPIENT);

    const deposit = await act("/api/v1/deposits", { amount_usdc: 1000 });
    expect(deposit.status).toBe(202);
    expect(deposit.body).toMatchObject({
      sandbox: true,
      object: "unsigned_transaction",
      status: "awaiting_signature",
      unsigned_transaction: { chain: "base", to: AaveV3Base.POOL },
    });
    const relayed = await signAndRelay(account, deposit.body);
    expect(relayed.status, JSON.stringify(relayed.body)).toBe(200);
    expect(relayed.body).toMatchObject({
      object: "relay_receipt",
      tx_id: deposit.body.tx_id,
      simulated: false,
      chain: "base",
      status: "confirmed",
      result: { action: "deposit", amount_usdc: 1000 },
    });
    expect(relayed.body.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await pub().getTransactionReceipt({ hash: relayed.body.tx_hash })).status).toBe("success");
    // in effect on the fork: 980 USDC supplied, the 20 USDC fee at the fee recipient
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address)).toBeGreaterThanOrEqual(980_000_000n - 1n);
    expect((await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, FEE_RECIPIENT)) - feeBefore).toBe(20_000_000n);
    expect(relayed.body.provided_steps.map((s: { kind: string }) => s.kind)).toEqual(["fee_transfer", "approval"]);
    // relaying the same signed transaction again answers the same receipt
    const again = await spec("POST", "/api/v1/relay", {
      body: { tx_id: deposit.body.tx_id, signed_transaction: relayed.signed },
      headers: { "idempotency-key": key() },
    });
    expect([again.status, again.body.tx_hash]).toEqual([200, relayed.body.tx_hash]);

    const convert = await act("/api/v1/convert", { amount_usdc: 500, target: "eth" });
    expect(convert.status).toBe(202);
    const converted = await signAndRelay(account, convert.body);
    expect(converted.status, JSON.stringify(converted.body)).toBe(200);
    expect(converted.body).toMatchObject({ status: "confirmed", simulated: false, result: { action: "convert" } });
    expect(await balanceOf(AaveV3Base.ASSETS.WETH.A_TOKEN, account.address)).toBeGreaterThan(0n);

    const over = await act("/api/v1/borrow", { amount_usdc: 100000 });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ error: "ltv_limit_exceeded", allowed: false, approved: false });
    const safe = over.body.safe_amount as number;
    expect(safe).toBeGreaterThan(0);
    const borrow = await act("/api/v1/borrow", { amount_usdc: safe });
    expect(borrow.status).toBe(202);
    // estimated right after the convert touched the reserves, relayed more than a block later: the gas viem
    // estimated still suffices (the fork's blocks are 2 s apart whenever mined, not wall-clock seconds)
    const borrowed = await signAndRelay(account, borrow.body, { thinkMs: 2_500 });
    expect(borrowed.status, JSON.stringify(borrowed.body)).toBe(200);
    expect(borrowed.body).toMatchObject({ status: "confirmed", simulated: false, result: { action: "borrow", sequence_complete: true } });
    expect(borrowed.body.result.resulting_ltv).toBeLessThanOrEqual(60);
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.V_TOKEN, account.address)).toBeGreaterThanOrEqual(BigInt(Math.round(safe * 1e6)) - 1n);

    const repay = await act("/api/v1/repay", { amount_usdc: 100 });
    expect(repay.status).toBe(202);
    const repaid = await signAndRelay(account, repay.body);
    expect(repaid.status, JSON.stringify(repaid.body)).toBe(200);
    expect(repaid.body).toMatchObject({ status: "confirmed", simulated: false, result: { action: "repay" } });

    // the treasury reads the fork: no envelope pending, the debt and the LTV of the wallet's Aave position
    const state = await spec("GET", "/api/v1/treasury", { headers: { authorization: `Bearer ${apiKey}` } });
    expect(state.status).toBe(200);
    expect(state.body.debt_usdc).toBeGreaterThan(0);
    expect(state.body.ltv).toBeGreaterThan(0);
    expect(state.body.pending_tx_id ?? null).toBeNull();
  }, 120_000);
});

describe("the largest amounts the spec allows", () => {
  it("a new wallet deposits and converts 100,000 USDC each with one signature", async () => {
    const { account, act } = await register("wallet");
    let supplied = 0n;
    for (const [path, body] of [
      ["/api/v1/deposits", { amount_usdc: 100000 }],
      ["/api/v1/convert", { amount_usdc: 100000, target: "btc" }],
    ] as const) {
      const env = await act(path, body);
      expect(env.status, JSON.stringify(env.body)).toBe(202);
      if (path === "/api/v1/convert") supplied = BigInt(env.body.steps.at(-1).summary.args.amount);
      const r = await signAndRelay(account, env.body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ status: "confirmed", simulated: false, result: { amount_usdc: 100000, sequence_complete: true } });
    }
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address)).toBeGreaterThanOrEqual(98_000_000_000n - 1n);
    // 98,000 USDC for cbBTC at the pool's quote (QuoterV2, its fee and price impact included) less the 1% bound: what the
    // envelope supplied, under the 1.61699999 cbBTC the sandbox's price of 60,000 would give
    expect(await balanceOf(AaveV3Base.ASSETS.cbBTC.A_TOKEN, account.address)).toBe(supplied);
    expect(supplied).toBeGreaterThan(150_000_000n);
    expect(supplied).toBeLessThan(161_699_999n);
  }, 120_000);
});

describe("managed mode", () => {
  it("a brand-new wallet gets the receipts of 2.4 with their statuses, each action executed on the fork", async () => {
    const { account, act } = await register("managed");
    const deposit = await act("/api/v1/deposits", { amount_usdc: 100000 });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(200);
    expect(deposit.body).toMatchObject({
      sandbox: true,
      object: "action_receipt",
      action: "deposit",
      amount_usdc: 100000,
      fee_usdc: 2000,
      net_amount: 98000,
      status: "processing",
      chain_execution: { simulated: false },
    });
    expect(deposit.body.deposit_id).toMatch(/^dep_/);
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address)).toBeGreaterThanOrEqual(98_000_000_000n - 1n);

    const convert = await act("/api/v1/convert", { amount_usdc: 1000, target: "btc" });
    expect(convert.status, JSON.stringify(convert.body)).toBe(200);
    expect(convert.body).toMatchObject({ action: "convert", target: "btc", fee_usdc: 20, status: "processing" });
    expect(convert.body.conversion_id).toMatch(/^cnv_/);
    expect(await balanceOf(AaveV3Base.ASSETS.cbBTC.A_TOKEN, account.address)).toBeGreaterThan(0n);

    const over = await act("/api/v1/borrow", { amount_usdc: 100000 });
    expect(over.status).toBe(403);
    const borrow = await act("/api/v1/borrow", { amount_usdc: over.body.safe_amount });
    expect(borrow.status, JSON.stringify(borrow.body)).toBe(200);
    expect(borrow.body).toMatchObject({ action: "borrow", status: "approved", chain_execution: { simulated: false } });
    expect(borrow.body.borrow_id).toMatch(/^brw_/);

    const repay = await act("/api/v1/repay", { amount_usdc: 100 });
    expect(repay.status, JSON.stringify(repay.body)).toBe(200);
    expect(repay.body).toMatchObject({ action: "repay", amount_usdc: 100, status: "completed" });
    expect(repay.body.repayment_id).toMatch(/^rep_/);
    expect(repay.body.remaining_borrow).toBeGreaterThan(0);
  }, 120_000);
});

describe("a chain that is not the sandbox's", () => {
  /** the same fork behind a JSON-RPC proxy that says it is Geth: the sandbox must not touch it */
  async function gethLookalike(): Promise<{ url: string; close: () => Promise<void> }> {
    const server = http2.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", async () => {
        const msg = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[];
        const one = async (m: { id: number; method: string }) =>
          m.method === "web3_clientVersion" ? { jsonrpc: "2.0", id: m.id, result: "Geth/v1.14.0-stable/linux-amd64/go1.22" } : null;
        const list = Array.isArray(msg) ? msg : [msg];
        const answers = await Promise.all(list.map(one));
        if (answers.every((a) => a !== null)) {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify(Array.isArray(msg) ? answers : answers[0]));
          return;
        }
        const upstream = await fetch(fork.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
        res.setHeader("content-type", "application/json");
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
  }

  it("keeps insufficient_balance for a new wallet and answers prerequisite_steps_required to a one-signature relay", async () => {
    const proxy = await gethLookalike();
    const other = await startTestGateway({ BASE_RPC_URL: proxy.url, FEE_RECIPIENT });
    try {
      const status = await call(other.url, "GET", "/api/v1/public/gateway-status");
      expect(status.body.chains[0]).toEqual({
        chain: "base",
        execution: "broadcast",
        network: "test_network",
        sandbox_funding: false,
        aave: { pool: AaveV3Base.POOL, pool_revision: fork.manifest.aave.pool_revision, version: aaveVersionOf(fork.manifest.aave.pool_revision) },
      });
      const account = privateKeyToAccount(generatePrivateKey());
      const reg = await call(other.url, "POST", "/api/v1/treasuries", { body: { wallet_address: account.address } });
      const act = (path: string, body: Record<string, unknown>) =>
        call(other.url, "POST", path, { body, headers: { authorization: `Bearer ${reg.body.api_key}`, "idempotency-key": key() } });
      const refused = await act("/api/v1/deposits", { amount_usdc: 500 });
      expect([refused.status, refused.body.error]).toEqual([400, "insufficient_balance"]);
      expect(await pub().getBalance({ address: account.address })).toBe(0n);

      await fork.fund(account.address, 500_000_000n);
      const env = await act("/api/v1/deposits", { amount_usdc: 500 });
      expect(env.status).toBe(202);
      const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
      const u = env.body.unsigned_transaction;
      // nothing is approved outside the sandbox: the client signs with an explicit gas limit
      const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 400_000n }));
      const r = await call(other.url, "POST", "/api/v1/relay", {
        body: { tx_id: env.body.tx_id, signed_transaction: signed },
        headers: { "idempotency-key": key() },
      });
      expect(r.status).toBe(409);
      expect(r.body.error).toBe("prerequisite_steps_required");
      expect(r.body.prerequisite_steps.map((s: { kind: string; tx_id: string }) => [s.kind, s.tx_id])).toEqual([
        ["fee_transfer", env.body.steps[0].tx_id],
        ["approval", env.body.steps[1].tx_id],
      ]);
      expect(await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, account.address)).toBe(500_000_000n);
    } finally {
      await other.close();
      await proxy.close();
    }
  }, 60_000);
});

describe("figures", () => {
  it("no answer of the flows above carries float noise (figures come from exact integers, divided once at the edge)", async () => {
    // the reads a person looks at after the flows, for every treasury they made
    const keys = new Set(answers.map((a) => (a.body as { api_key?: string } | null)?.api_key).filter((k): k is string => typeof k === "string"));
    for (const k of keys)
      for (const route of ["/api/v1/treasury", "/api/v1/health", "/api/v1/policy-state", "/api/v1/audit"])
        await spec("GET", route, { headers: { authorization: `Bearer ${k}` } });
    expect(answers.length).toBeGreaterThan(30);
    expect(answers.flatMap((a) => floatArtefacts(a.body, a.route))).toEqual([]);
  });
});
