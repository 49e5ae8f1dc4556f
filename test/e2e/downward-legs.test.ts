/**
 * The downward legs (withdraw, sell) on the offline Base fork (real Aave V3 at the real addresses): a
 * wallet-mode treasury signs with viem and with the signer agent, a managed
 * sandbox wallet runs on the fork, a sandbox key's ledger. Every figure is
 * read on chain to the atomic unit: the aToken falls and the wallet's token
 * rises by exactly the units withdrawn, no fee moves, and the audit trail has
 * the execution with its trigger. Over the ceiling it is a 403 whose
 * safe_amount (in the asset's units) passes when retried.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, getAddress, http, parseAbi, parseEther, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { CONVERT_POOL_FEE, SWAP_ROUTER_02_ABI, swapRouter02 } from "@treasury/core/contracts/uniswap";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { SignerAgent } from "../../signer-agent/src/agent";
import { defaultPolicy } from "../../signer-agent/src/policy";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, registerProven, sandboxTenant } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(4).address;
const A = AaveV3Base.ASSETS;
let fork: BaseForkNode;
let gw: TestGateway;
let v: ResponseValidator;
const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balanceOf = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT });
  v = new ResponseValidator((await authed(gw.url, "").get("/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** a wallet with ETH collateral on Aave and USDC borrowed against it, through the service (convert, then borrow) */
async function walletWithPosition(mode: "wallet" | "managed" = "wallet") {
  const privateKey = generatePrivateKey();
  const account = privateKeyToAccount(privateKey);
  await fork.fund(account.address, 10_000_000_000n);
  const t = await registerProven(gw.url, account, { execution_mode: mode });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "withdraw-"));
  const agent = new SignerAgent({
    privateKey,
    gatewayUrl: gw.url,
    rpcUrl: fork.rpcUrl,
    bearer: t.key,
    policy: defaultPolicy([FEE_RECIPIENT]),
    audit: new AuditLog(path.join(dir, "audit.jsonl")),
  });
  if (mode === "wallet") {
    await agent.run("convert", 6_000, { target: "eth" });
    await agent.run("borrow", 2_000);
  } else {
    const api = authed(gw.url, t.key);
    expect((await api.post("/api/v1/convert", { amount_usdc: 6_000, target: "eth" })).status).toBe(200);
    expect((await api.post("/api/v1/borrow", { amount_usdc: 2_000 })).status).toBe(200);
  }
  return { account, agent, t, api: authed(gw.url, t.key) };
}

describe("withdraw", () => {
  it("wallet mode: over the ceiling is 403 with safe_amount in ETH; retried with it, signed with viem, the aWETH falls and the WETH arrives exactly; no fee", async () => {
    const { account, api } = await walletWithPosition();
    const aBefore = await balanceOf(A.WETH.A_TOKEN, account.address);
    const wethBefore = await balanceOf(A.WETH.UNDERLYING, account.address);
    const feesBefore = await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT);

    const over = await api.post("/api/v1/withdraw", { asset: "ETH", amount: 1.5 });
    v.check("POST", "/api/v1/withdraw", over.status, over.body);
    expect([over.status, over.body.error, over.body.asset]).toEqual([403, "ltv_limit_exceeded", "ETH"]);
    expect(over.body.safe_amount).toBeGreaterThan(0);
    expect(over.body.safe_amount).toBeLessThan(1.5);

    const envelope = await api.post("/api/v1/withdraw", { asset: "ETH", amount: over.body.safe_amount });
    v.check("POST", "/api/v1/withdraw", envelope.status, envelope.body);
    expect(envelope.status, envelope.text).toBe(202);
    expect(envelope.body).toMatchObject({ action: "withdraw", fee_usdc: 0 });
    expect(envelope.body.steps).toHaveLength(1);
    expect(envelope.body.steps[0].summary).toMatchObject({ function: "withdraw", args: { to: account.address } });

    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
    const u = envelope.body.unsigned_transaction;
    const signed: Hex = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value) }));
    const relayed = await authed(gw.url, "").post("/api/v1/relay", { tx_id: envelope.body.tx_id, signed_transaction: signed });
    expect([relayed.status, relayed.body.status, relayed.body.simulated], relayed.text).toEqual([200, "confirmed", false]);

    const units = BigInt(Math.round(over.body.safe_amount * 1e6)) * 10n ** 12n;
    expect(await balanceOf(A.WETH.UNDERLYING, account.address)).toBe(wethBefore + units);
    // the aToken accrues interest by the second: it fell by the units, to within what a few blocks accrue
    const aAfter = await balanceOf(A.WETH.A_TOKEN, account.address);
    expect(aBefore - aAfter).toBeGreaterThanOrEqual(units - 10n ** 9n);
    expect(aBefore - aAfter).toBeLessThanOrEqual(units);
    expect(await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT)).toBe(feesBefore);
    const audit = (await api.get("/api/v1/audit")).body.data;
    expect(audit.at(-1)).toMatchObject({ action: "withdraw", fee_usdc: 0, trigger: "relayed_signature" });
    // LTV at or under the ceiling (balanced: 60%)
    const state = (await api.get("/api/v1/treasury")).body;
    expect(state.ltv).toBeLessThanOrEqual(60);
  });

  it("wallet mode with the signer agent: withdraw USDC and ETH, each exactly; the agent refuses an envelope that withdraws to another address", async () => {
    const { account, agent, api } = await walletWithPosition();
    // some USDC supplied (a deposit), then taken back
    await agent.run("deposit", 200);
    const aUsdc = await balanceOf(A.USDC.A_TOKEN, account.address);
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    const r = await agent.run("withdraw", 100, { asset: "usdc" });
    expect(r.receipts.at(-1)).toMatchObject({ status: "confirmed", simulated: false, result: { action: "withdraw" } });
    expect(await balanceOf(A.USDC.UNDERLYING, account.address)).toBe(usdc + 100_000_000n);
    expect(aUsdc - (await balanceOf(A.USDC.A_TOKEN, account.address))).toBe(100_000_000n);

    const weth = await balanceOf(A.WETH.UNDERLYING, account.address);
    await agent.run("withdraw", 0.1, { asset: "eth" });
    expect(await balanceOf(A.WETH.UNDERLYING, account.address)).toBe(weth + 10n ** 17n);

    // an envelope whose withdraw pays another address is refused on its decoded calldata, before any signature
    const e = (await api.post("/api/v1/withdraw", { asset: "ETH", amount: 0.1 })).body;
    const stranger = "0x000000000000000000000000000000000000dEaD";
    const tampered = {
      ...e,
      steps: e.steps.map((s: any) => ({
        ...s,
        unsigned_transaction: {
          ...s.unsigned_transaction,
          data: s.unsigned_transaction.data.replace(account.address.slice(2).toLowerCase(), stranger.slice(2).toLowerCase()),
        },
      })),
    };
    const { checkIntent } = await import("../../signer-agent/src/policy");
    expect(() =>
      checkIntent({ action: "withdraw", amountMicro: 0n, asset: "ETH", units: 10n ** 17n }, tampered, account.address, defaultPolicy([FEE_RECIPIENT])),
    ).toThrow(`withdrawal to ${stranger}, not this wallet`);
  });

  it("a managed sandbox wallet withdraws on the fork (impersonated), and a sandbox key's ledger gives the units back", async () => {
    const { account, api } = await walletWithPosition("managed");
    const weth = await balanceOf(A.WETH.UNDERLYING, account.address);
    const done = await api.post("/api/v1/withdraw", { asset: "ETH", amount: 0.2 });
    v.check("POST", "/api/v1/withdraw", done.status, done.body);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ action: "withdraw", asset: "ETH", amount: 0.2, fee_usdc: 0, status: "completed", chain_execution: { simulated: false } });
    expect(await balanceOf(A.WETH.UNDERLYING, account.address)).toBe(weth + 2n * 10n ** 17n);

    const key = await sandboxTenant(gw.url);
    const ledger = authed(gw.url, key.key);
    const before = (await ledger.get("/api/v1/treasury")).body.holdings;
    const w = await ledger.post("/api/v1/withdraw", { asset: "ETH", amount: 1 });
    expect([w.status, w.body.chain_execution?.simulated]).toEqual([200, true]);
    expect((await ledger.get("/api/v1/treasury")).body.holdings.eth).toBeCloseTo(before.eth - 1, 9);
    // more than the ledger holds: a typed 400, nothing changed
    const tooMuch = await ledger.post("/api/v1/withdraw", { asset: "BTC", amount: 1_000 });
    expect([tooMuch.status, tooMuch.body.error]).toEqual([400, "insufficient_collateral"]);
  });
});

/** a whale sells WETH into the fork's USDC/WETH pool: its price falls, the oracle's does not */
async function movePoolDown(weth: bigint) {
  const whale = privateKeyToAccount(generatePrivateKey());
  await fork.fund(whale.address);
  const w = createWalletClient({ account: whale, chain: base, transport: http(fork.rpcUrl) });
  const wait = (hash: Hex) => pub().waitForTransactionReceipt({ hash, pollingInterval: 50 });
  await wait(await w.writeContract({ address: A.WETH.UNDERLYING, abi: parseAbi(["function deposit() payable"]), functionName: "deposit", value: weth }));
  await wait(await w.writeContract({ address: A.WETH.UNDERLYING, abi: ERC20_ABI, functionName: "approve", args: [swapRouter02(8453), weth] }));
  await wait(
    await w.writeContract({
      address: swapRouter02(8453),
      abi: SWAP_ROUTER_02_ABI,
      functionName: "exactInputSingle",
      args: [
        {
          tokenIn: A.WETH.UNDERLYING,
          tokenOut: A.USDC.UNDERLYING,
          fee: CONVERT_POOL_FEE,
          recipient: whale.address,
          amountIn: weth,
          amountOutMinimum: 0n,
          sqrtPriceLimitX96: 0n,
        },
      ],
    }),
  );
}

describe("sell", () => {
  it("the signer agent sells ETH collateral: the aWETH falls by the units, the wallet's USDC rises by the pool's quote (at least the bound); no fee", async () => {
    const { account, agent, api } = await walletWithPosition();
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    const aWeth = await balanceOf(A.WETH.A_TOKEN, account.address);
    const fees = await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT);
    const r = await agent.run("sell", 0.3, { asset: "eth" });
    const swap = r.envelope.steps.find((s) => (s.summary as { function?: string }).function === "exactInputSingle")!;
    const minOut = BigInt((swap.summary as unknown as { args: { amountOutMinimum: string } }).args.amountOutMinimum);
    const gained = (await balanceOf(A.USDC.UNDERLYING, account.address)) - usdc;
    expect(gained).toBeGreaterThanOrEqual(minOut);
    // nothing moved the pool between the quote and the swap: the output is the quote, and the bound 1% under it
    const receipt = (await api.get(`/api/v1/audit`)).body.data.at(-1);
    expect(receipt).toMatchObject({ action: "sell", fee_usdc: 0 });
    expect(minOut).toBe((gained * 9_900n) / 10_000n);
    expect(aWeth - (await balanceOf(A.WETH.A_TOKEN, account.address))).toBeLessThanOrEqual(3n * 10n ** 17n);
    expect(aWeth - (await balanceOf(A.WETH.A_TOKEN, account.address))).toBeGreaterThanOrEqual(3n * 10n ** 17n - 10n ** 9n);
    expect(await balanceOf(A.USDC.UNDERLYING, FEE_RECIPIENT)).toBe(fees);
  });

  it("the envelope states the quote and its bound; the signer refuses a bound under its own quote less its maximum slippage", async () => {
    const { account, api } = await walletWithPosition();
    const e = await api.post("/api/v1/sell", { asset: "ETH", amount: 0.2 });
    v.check("POST", "/api/v1/sell", e.status, e.body);
    expect(e.status, e.text).toBe(202);
    expect(e.body.steps.map((s: any) => s.summary.function)).toEqual(["withdraw", "approve", "exactInputSingle"]);
    const swap = e.body.steps[2];
    expect(swap.summary.description).toMatch(/1% below the pool's quote of [\d.]+ USDC/);
    const { checkIntent } = await import("../../signer-agent/src/policy");
    const policy = defaultPolicy([FEE_RECIPIENT]);
    const minOut = BigInt(swap.summary.args.amountOutMinimum);
    const intent = { action: "sell" as const, amountMicro: 0n, asset: "ETH" as const, units: 2n * 10n ** 17n };
    const floorAt = (floor: bigint) => ({
      swapFloors: [{ token: getAddress(A.WETH.UNDERLYING), tokenOut: getAddress(A.USDC.UNDERLYING), amountIn: 2n * 10n ** 17n, floor }],
    });
    // the signer's floor at the same quote (1.5% under it) accepts the gateway's 1% bound ...
    expect(checkIntent({ ...intent, ...floorAt((minOut * 9_850n) / 9_900n) }, e.body, account.address, policy)).toHaveLength(3);
    // ... and an envelope whose bound was lowered is refused on its decoded calldata
    const lowered = minOut / 2n;
    const hex = (n: bigint) => n.toString(16).padStart(64, "0");
    const tampered = {
      ...e.body,
      steps: e.body.steps.map((s: any, i: number) =>
        i !== 2 ? s : { ...s, unsigned_transaction: { ...s.unsigned_transaction, data: s.unsigned_transaction.data.replace(hex(minOut), hex(lowered)) } },
      ),
    };
    expect(() => checkIntent({ ...intent, ...floorAt((minOut * 9_850n) / 9_900n) }, tampered, account.address, policy)).toThrow(
      /the sell's swap accepts as little as/,
    );
    // a sale with a fee step is refused whatever its rule
    const withFee = {
      ...e.body,
      steps: [
        ...e.body.steps,
        {
          unsigned_transaction: {
            ...e.body.steps[0].unsigned_transaction,
            to: A.USDC.UNDERLYING,
            data: `0xa9059cbb${FEE_RECIPIENT.slice(2).toLowerCase().padStart(64, "0")}${hex(1n)}`,
          },
        },
      ],
    };
    expect(() => checkIntent({ ...intent, ...floorAt(0n) }, withFee, account.address, policy)).toThrow(
      "a sell is free (a downward leg); the envelope pays a fee",
    );
  });

  it("over the ceiling is 403 with safe_amount in ETH; retried with it, each step signed with viem, the sale passes and the LTV stays under the ceiling", async () => {
    const { account, api } = await walletWithPosition();
    const over = await api.post("/api/v1/sell", { asset: "ETH", amount: 1.5 });
    v.check("POST", "/api/v1/sell", over.status, over.body);
    expect([over.status, over.body.error, over.body.asset]).toEqual([403, "ltv_limit_exceeded", "ETH"]);
    expect(over.body.safe_amount).toBeGreaterThan(0);
    expect(over.body.safe_amount).toBeLessThan(1.5);
    const e = await api.post("/api/v1/sell", { asset: "ETH", amount: over.body.safe_amount });
    v.check("POST", "/api/v1/sell", e.status, e.body);
    expect(e.status, e.text).toBe(202);
    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    for (const step of e.body.steps) {
      const u = step.unsigned_transaction;
      const signed: Hex = await wallet.signTransaction(
        await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 400_000n }),
      );
      const r = await authed(gw.url, "").post("/api/v1/relay", { tx_id: step.tx_id, signed_transaction: signed });
      expect([r.status, r.body.status], r.text).toEqual([200, "confirmed"]);
    }
    const minOut = BigInt(e.body.steps[2].summary.args.amountOutMinimum);
    expect((await balanceOf(A.USDC.UNDERLYING, account.address)) - usdc).toBeGreaterThanOrEqual(minOut);
    expect((await api.get("/api/v1/audit")).body.data.at(-1)).toMatchObject({ action: "sell", fee_usdc: 0, trigger: "relayed_signature" });
    expect((await api.get("/api/v1/treasury")).body.ltv).toBeLessThanOrEqual(60);
  });

  it("the sandbox: a managed sandbox wallet sells and exits on the fork (impersonated); a sandbox key's ledger sells and exits", async () => {
    const { account, api } = await walletWithPosition("managed");
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    const s = await api.post("/api/v1/sell", { asset: "ETH", amount: 0.2 });
    v.check("POST", "/api/v1/sell", s.status, s.body);
    expect(s.status, s.text).toBe(200);
    expect(s.body).toMatchObject({ action: "sell", fee_usdc: 0, status: "completed", chain_execution: { simulated: false } });
    expect((await balanceOf(A.USDC.UNDERLYING, account.address)) - usdc).toBeGreaterThanOrEqual(BigInt(Math.round(s.body.min_out_usdc * 1e6)));
    const x = await api.post("/api/v1/exit", { sell: true });
    v.check("POST", "/api/v1/exit", x.status, x.body);
    expect(x.status, x.text).toBe(200);
    expect(x.body).toMatchObject({ action: "exit", fee_usdc: 0, status: "completed", sold: true });
    expect([
      await balanceOf(A.USDC.V_TOKEN, account.address),
      await balanceOf(A.USDC.A_TOKEN, account.address),
      await balanceOf(A.WETH.A_TOKEN, account.address),
    ]).toEqual([0n, 0n, 0n]);
    expect((await api.get("/api/v1/audit")).body.data.slice(-2).map((a: any) => [a.action, a.fee_usdc, a.trigger])).toEqual([
      ["sell", 0, "api_request"],
      ["exit", 0, "api_request"],
    ]);

    const key = await sandboxTenant(gw.url);
    const ledger = authed(gw.url, key.key);
    const before = (await ledger.get("/api/v1/treasury")).body.holdings;
    const sold = await ledger.post("/api/v1/sell", { asset: "ETH", amount: 1 });
    expect([sold.status, sold.body.chain_execution?.simulated], sold.text).toEqual([200, true]);
    const mid = (await ledger.get("/api/v1/treasury")).body.holdings;
    expect(mid.eth).toBeCloseTo(before.eth - 1, 9);
    // a ledger fills at the sandbox's price: the quote the receipt states
    expect(mid.usdc - before.usdc).toBeCloseTo(sold.body.quote_usdc, 6);
    expect((await ledger.get("/api/v1/treasury")).body.debt_usdc).toBeGreaterThan(0);
    const out = await ledger.post("/api/v1/exit", {});
    expect([out.status, out.body.chain_execution?.simulated], out.text).toEqual([200, true]);
    const after = (await ledger.get("/api/v1/treasury")).body;
    expect([after.holdings.eth, after.holdings.btc, after.debt_usdc]).toEqual([0, 0, 0]);
  });

  it("a pool that moved against the sale between envelope and relay: the swap is refused unsent (Too little received); the ETH is in the wallet, nothing lost", async () => {
    const { account, api } = await walletWithPosition();
    const e = (await api.post("/api/v1/sell", { asset: "ETH", amount: 0.2 })).body;
    await movePoolDown(parseEther("90"));
    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
    const usdc = await balanceOf(A.USDC.UNDERLYING, account.address);
    const weth = await balanceOf(A.WETH.UNDERLYING, account.address);
    const relay = async (step: any) => {
      const u = step.unsigned_transaction;
      // a gas limit of its own: the wallet signs without estimating (an estimate of the swap would already revert)
      const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 400_000n }));
      return authed(gw.url, "").post("/api/v1/relay", { tx_id: step.tx_id, signed_transaction: signed });
    };
    expect((await relay(e.steps[0])).status).toBe(200);
    expect((await relay(e.steps[1])).status).toBe(200);
    const refused = await relay(e.steps[2]);
    v.check("POST", "/api/v1/relay", refused.status, refused.body);
    expect([refused.status, refused.body.error]).toEqual([422, "transaction_would_revert"]);
    expect(refused.body.message).toMatch(/Too little received/);
    expect(await balanceOf(A.WETH.UNDERLYING, account.address)).toBe(weth + 2n * 10n ** 17n);
    expect(await balanceOf(A.USDC.UNDERLYING, account.address)).toBe(usdc);
  });
});
