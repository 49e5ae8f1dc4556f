/**
 * exit on the offline Base fork (real Aave V3 and Uniswap V3 at the real
 * addresses): it ends with zero debt and zero aTokens on chain, read to the
 * unit, whatever interest accrued between the envelope and the signature; a
 * wallet that holds no USDC exits from its collateral and its health factor,
 * read after every step, never goes under 1; no fee moves.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createTestClient, createWalletClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { SignerAgent } from "../../signer-agent/src/agent";
import { defaultPolicy } from "../../signer-agent/src/policy";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { call } from "../helpers/gateway";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { authed, newIdempotencyKey, registerProven } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(4).address;
const A = AaveV3Base.ASSETS;
const POOL = AaveV3Base.POOL;
let fork: BaseForkNode;
let gw: TestGateway;
let v: ResponseValidator;
const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balanceOf = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });
const healthFactor = async (who: `0x${string}`) =>
  (await pub().readContract({ address: POOL, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [who] }))[5];

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT });
  v = new ResponseValidator((await authed(gw.url, "").get("/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** a wallet with ETH collateral (a convert) and USDC borrowed against it; `spent`: the USDC then sent away */
async function borrower(opts: { spent: boolean; borrow?: number }) {
  const privateKey = generatePrivateKey();
  const account = privateKeyToAccount(privateKey);
  await fork.fund(account.address, 7_000_000_000n);
  const t = await registerProven(gw.url, account, { execution_mode: "wallet" });
  const agent = new SignerAgent({
    privateKey,
    gatewayUrl: gw.url,
    rpcUrl: fork.rpcUrl,
    bearer: t.key,
    policy: defaultPolicy([FEE_RECIPIENT]),
    audit: new AuditLog(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "exit-")), "audit.jsonl")),
  });
  await agent.run("convert", 6_000, { target: "eth" });
  await agent.run("borrow", opts.borrow ?? 3_000);
  if (opts.spent) {
    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
    const all = await balanceOf(A.USDC.UNDERLYING, account.address);
    const hash = await wallet.writeContract({
      address: A.USDC.UNDERLYING,
      abi: ERC20_ABI,
      functionName: "transfer",
      args: ["0x000000000000000000000000000000000000dEaD", all],
    });
    await pub().waitForTransactionReceipt({ hash, pollingInterval: 50 });
  }
  return { account, agent, privateKey, api: authed(gw.url, t.key) };
}

/** sign and relay each step in order with viem, reading the health factor after each */
async function relayEach(account: PrivateKeyAccount, envelope: any, after?: (step: any) => Promise<void>) {
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
  for (const step of envelope.steps) {
    const u = step.unsigned_transaction;
    const signed: Hex = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 600_000n }));
    const r = await authed(gw.url, "").post("/api/v1/relay", { tx_id: step.tx_id, signed_transaction: signed });
    expect([r.status, r.body.status], `${step.seq} ${step.summary.function}: ${r.text}`).toEqual([200, "confirmed"]);
    await after?.(step);
  }
}

const closedOnChain = async (who: `0x${string}`) => ({
  debt: await balanceOf(A.USDC.V_TOKEN, who),
  aUsdc: await balanceOf(A.USDC.A_TOKEN, who),
  aWeth: await balanceOf(A.WETH.A_TOKEN, who),
  aBtc: await balanceOf(A.cbBTC.A_TOKEN, who),
});

describe("exit", () => {
  it("a wallet with no USDC exits from its collateral: the health factor never under 1 at any step; zero debt, zero aTokens; no fee", async () => {
    const { account, api } = await borrower({ spent: true, borrow: 3_400 });
    expect(await balanceOf(A.USDC.UNDERLYING, account.address)).toBe(0n);
    const fees = await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT);
    const e = await api.post("/api/v1/exit", {});
    v.check("POST", "/api/v1/exit", e.status, e.body);
    expect(e.status, e.text).toBe(202);
    expect(e.body).toMatchObject({ action: "exit", fee_usdc: 0 });
    const fns = e.body.steps.map((s: any) => s.summary.function);
    expect(fns.filter((f: string) => f === "exactInputSingle").length).toBeGreaterThanOrEqual(1);
    expect(fns.at(-1)).toBe("withdraw");
    const lowest: bigint[] = [];
    await relayEach(account, e.body, async () => {
      const hf = await healthFactor(account.address);
      lowest.push(hf);
      expect(hf).toBeGreaterThanOrEqual(10n ** 18n);
    });
    expect(await closedOnChain(account.address)).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n, aBtc: 0n });
    expect(await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT)).toBe(fees);
    const audit = (await api.get("/api/v1/audit")).body.data.at(-1);
    expect(audit).toMatchObject({ action: "exit", fee_usdc: 0, trigger: "relayed_signature" });
    console.log(
      `[exit] from collateral: ${e.body.steps.length} steps, lowest health factor after a step ${Number(lowest.reduce((a, b) => (a < b ? a : b)) / 10n ** 14n) / 10_000}`,
    );
  });

  it("an exit signed an hour after its envelope (interest accrued) still ends with zero debt and zero aTokens", async () => {
    await busyPool();
    const { account, api } = await borrower({ spent: false });
    const e = await api.post("/api/v1/exit", {});
    expect(e.status, e.text).toBe(202);
    const debtThen = await balanceOf(A.USDC.V_TOKEN, account.address);
    const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
    await test.increaseTime({ seconds: 3_600 });
    await test.mine({ blocks: 1 });
    expect(await balanceOf(A.USDC.V_TOKEN, account.address)).toBeGreaterThan(debtThen);
    await relayEach(account, e.body);
    expect(await closedOnChain(account.address)).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n, aBtc: 0n });
  });

  it("a keyless wallet whose USDC is all in Aave exits with its own signature (sign-in-with-x), paying nothing: the supplied USDC repays", async () => {
    const { account, agent } = await borrower({ spent: false, borrow: 1_000 });
    // every USDC of the wallet supplied to Aave: nothing left to pay a call with
    await agent.run("deposit", Number(await balanceOf(A.USDC.UNDERLYING, account.address)) / 1e6);
    expect(await balanceOf(A.USDC.UNDERLYING, account.address)).toBe(0n);
    expect(await balanceOf(A.USDC.A_TOKEN, account.address)).toBeGreaterThan(await balanceOf(A.USDC.V_TOKEN, account.address));
    const key = newIdempotencyKey();
    // no credential: the 402 offers the price and, beside it, the wallet's own signature bound to this request
    const challenge = await call(gw.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": key } });
    expect(challenge.status).toBe(402);
    const ext = challenge.body.extensions["sign-in-with-x"];
    expect(ext.info.resources).toEqual([`${gw.url}/api/v1/exit`, expect.stringMatching(/^urn:x402:request:[0-9a-f]{64}$/)]);
    const signed = async () =>
      encodeSIWxHeader(await createSIWxPayload({ ...ext.info, chainId: "eip155:8453", type: "eip191" }, account, `${gw.url}/api/v1/exit`));
    const header = await signed();
    const e = await call(gw.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": key, "sign-in-with-x": header } });
    v.check("POST", "/api/v1/exit", e.status, e.body);
    expect(e.status, e.text).toBe(202);
    expect(e.headers.get("x-payment-response")).toBeNull();
    // the same signature again (its nonce spent), or for another request (its digest), is refused
    const again = await call(gw.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": newIdempotencyKey(), "sign-in-with-x": header } });
    expect([again.status, again.body.error]).toEqual([401, "unauthorized"]);
    expect(again.body.extensions["sign-in-with-x"].info.nonce).toMatch(/^[0-9a-f]{32}$/);
    // a stranger's signature opens no one's treasury
    const stranger = privateKeyToAccount(generatePrivateKey());
    const foreign = encodeSIWxHeader(await createSIWxPayload({ ...ext.info, chainId: "eip155:8453", type: "eip191" }, stranger, `${gw.url}/api/v1/exit`));
    expect((await call(gw.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": key, "sign-in-with-x": foreign } })).status).toBe(401);
    // an upward leg never takes a signature for a credential: it asks for payment
    const deposit = await call(gw.url, "POST", "/api/v1/deposits", {
      body: { amount_usdc: "10" },
      headers: { "idempotency-key": newIdempotencyKey(), "sign-in-with-x": await signed() },
    });
    expect(deposit.status).toBe(402);
    expect(deposit.body.extensions?.["sign-in-with-x"]).toBeUndefined();
    expect(e.body.steps.map((x: any) => x.summary.function)).toEqual(["repayWithATokens", "withdraw", "withdraw"]);
    await relayEach(account, e.body);
    expect(await closedOnChain(account.address)).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n, aBtc: 0n });
  });

  it("an MCP client without a key exits with the wallet's signature: prepare_exit's payment-required offers sign-in-with-x for that very call, _meta carries it", async () => {
    const { account } = await borrower({ spent: true, borrow: 1_000 });
    const mcp = new Client({ name: "keyless-agent", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/api/mcp`)));
    const args = { idempotency_key: newIdempotencyKey() };
    const required = (await mcp.callTool({ name: "prepare_exit", arguments: args })).structuredContent as Record<string, any>;
    expect(required.http_status).toBe(402);
    expect(required.message).toMatch(/sign in with the wallet/);
    const info = required.extensions["sign-in-with-x"].info;
    const header = encodeSIWxHeader(await createSIWxPayload({ ...info, chainId: "eip155:8453", type: "eip191" }, account, `${gw.url}/api/v1/exit`));
    // signed for other arguments (a sale asked), it opens nothing
    const other = await mcp.callTool({ name: "prepare_exit", arguments: { ...args, sell: true }, _meta: { "sign-in-with-x": header } });
    expect((other.structuredContent as any).error).toBe("unauthorized");
    const fresh = (await mcp.callTool({ name: "prepare_exit", arguments: args })).structuredContent as Record<string, any>;
    const signed = encodeSIWxHeader(
      await createSIWxPayload({ ...fresh.extensions["sign-in-with-x"].info, chainId: "eip155:8453", type: "eip191" }, account, `${gw.url}/api/v1/exit`),
    );
    const envelope = await mcp.callTool({ name: "prepare_exit", arguments: args, _meta: { "sign-in-with-x": signed } });
    const e = envelope.structuredContent as Record<string, any>;
    expect([envelope.isError ?? false, e.http_status, e.action, e.fee_usdc], JSON.stringify(e)).toEqual([false, 202, "exit", 0]);
    expect(envelope._meta?.["x402/payment-response"]).toBeUndefined();
    await mcp.close();
    await relayEach(account, e);
    expect(await closedOnChain(account.address)).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n, aBtc: 0n });
  });

  it("with x402 off the way out still opens by signature (the 401 offers the sign-in); a wallet with a treasury on each chain signs in to the one of the chain it names", async () => {
    const off = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT, X402_ENABLED: "false" });
    try {
      const { account } = await borrower({ spent: true, borrow: 1_000 });
      const onBase = await registerProven(off.url, account, { execution_mode: "wallet" });
      // a newer registration of the same wallet on Arbitrum
      const onArbitrum = await registerProven(off.url, account, { execution_mode: "wallet", chain: "arbitrum" });
      const key = newIdempotencyKey();
      const asked = await call(off.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": key } });
      expect([asked.status, asked.body.error]).toEqual([401, "unauthorized"]);
      const info = asked.body.extensions["sign-in-with-x"].info;
      const header = encodeSIWxHeader(await createSIWxPayload({ ...info, chainId: "eip155:8453", type: "eip191" }, account, `${off.url}/api/v1/exit`));
      const e = await call(off.url, "POST", "/api/v1/exit", { body: {}, headers: { "idempotency-key": key, "sign-in-with-x": header } });
      expect(e.status, e.text).toBe(202);
      expect(e.headers.get("x-treasury-id")).toBe(onBase.treasuryId);
      expect(e.headers.get("x-treasury-id")).not.toBe(onArbitrum.treasuryId);
    } finally {
      await off.close();
    }
  });

  it("the signer agent without a key exits and sells, signing in with its wallet (never paying): only USDC left, zero debt, zero aTokens", async () => {
    const { account, privateKey } = await borrower({ spent: false });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exit-keyless-"));
    const audit = new AuditLog(path.join(dir, "audit.jsonl"));
    const agent = new SignerAgent({ privateKey, gatewayUrl: gw.url, rpcUrl: fork.rpcUrl, policy: defaultPolicy([FEE_RECIPIENT]), audit });
    const weth = await balanceOf(A.WETH.UNDERLYING, account.address);
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    const r = await agent.run("exit", 0, { sell: true });
    expect(r.receipts.every((x) => x.status === "confirmed")).toBe(true);
    expect(await closedOnChain(account.address)).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n, aBtc: 0n });
    // the WETH withdrawn was sold; what is left of it is the supply's interest after the envelope (dust)
    expect((await balanceOf(A.WETH.UNDERLYING, account.address)) - weth).toBeLessThan(10n ** 12n);
    // nothing was paid with x402 (the audit log records every payment)
    expect(fs.readFileSync(path.join(dir, "audit.jsonl"), "utf8")).not.toContain("x402_payment");
    // the collateral's USDC came in, the debt went out: about 5,800 - 3,000
    expect((await balanceOf(A.USDC.UNDERLYING, account.address)) - usdc).toBeGreaterThan(2_500_000_000n);
  });
});

/** another wallet borrows most of the pool's USDC: utilization (and so the interest an hour accrues) rises */
async function busyPool() {
  const whale = privateKeyToAccount(generatePrivateKey());
  const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
  await test.setBalance({ address: whale.address, value: 10_000n * 10n ** 18n });
  const w = createWalletClient({ account: whale, chain: base, transport: http(fork.rpcUrl) });
  const wait = (hash: Hex) => pub().waitForTransactionReceipt({ hash, pollingInterval: 50 });
  const weth = 3_000n * 10n ** 18n;
  await wait(
    await w.writeContract({
      address: A.WETH.UNDERLYING,
      abi: [{ type: "function", name: "deposit", stateMutability: "payable", inputs: [], outputs: [] }],
      functionName: "deposit",
      value: weth,
    }),
  );
  await wait(await w.writeContract({ address: A.WETH.UNDERLYING, abi: ERC20_ABI, functionName: "approve", args: [POOL, weth] }));
  await wait(await w.writeContract({ address: POOL, abi: AAVE_POOL_ABI, functionName: "supply", args: [A.WETH.UNDERLYING, weth, whale.address, 0] }));
  const liquidity = await balanceOf(A.USDC.UNDERLYING, A.USDC.A_TOKEN);
  await wait(
    await w.writeContract({
      address: POOL,
      abi: AAVE_POOL_ABI,
      functionName: "borrow",
      args: [A.USDC.UNDERLYING, (liquidity * 8n) / 10n, 2n, 0, whale.address],
    }),
  );
}
