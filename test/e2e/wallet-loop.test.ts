/**
 * The wallet-sovereign loop end to end on the local stack: the offline Base
 * fork (real Aave V3 at the real addresses), a local Base Sepolia with the
 * project's facilitator for x402, the gateway relaying to the fork, and the
 * signer agent (library and CLI) holding nothing but a key.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, http as viemHttp, parseAbi, publicActions, toFunctionSelector, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { aTokenBalance, aTokenMintScaled, vTokenMintScaled } from "@treasury/core/domain/aave-math";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { ManualClock } from "../../gateway/src/lib/clock";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { RefusedError, SignerAgent } from "../../signer-agent/src/agent";
import { defaultPolicy } from "../../signer-agent/src/policy";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { FACILITATOR_KEY } from "../helpers/x402-stack";

const ROOT = path.resolve(__dirname, "../..");
const FEE_RECIPIENT = devAccount(4).address;
let fork: BaseForkNode;
let sepolia: BaseSepoliaNode;
let facilitator: Awaited<ReturnType<typeof startFacilitator>>;
let gw: TestGateway;
const clock = new ManualClock(new Date());

const gatewayEnv = () => ({
  BASE_RPC_URL: fork.rpcUrl,
  X402_FACILITATOR: "local",
  X402_FACILITATOR_URL: facilitator.url,
  X402_PAY_TO: devAccount(2).address,
  FEE_RECIPIENT,
});

beforeAll(async () => {
  [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  facilitator = await startFacilitator({ rpcUrl: sepolia.rpcUrl, privateKey: FACILITATOR_KEY, port: 0 });
  gw = await startTestGateway(gatewayEnv(), { clock });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await facilitator?.close();
  await Promise.all([fork?.stop(), sepolia?.stop()]);
});

/** a fresh agent: a key, USDC and ETH on the fork, USDC on Base Sepolia for x402 */
async function newAgent(gatewayUrl = gw.url) {
  const privateKey = generatePrivateKey();
  const account = privateKeyToAccount(privateKey);
  const pub = createPublicClient({ chain: base, transport: viemHttp(fork.rpcUrl) });
  await fork.fund(account.address, 20_000_000_000n);
  await sepolia.fund(account.address, 10_000_000n);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-"));
  const audit = new AuditLog(path.join(dir, "audit.jsonl"));
  const agent = new SignerAgent({ privateKey, gatewayUrl, rpcUrl: fork.rpcUrl, x402RpcUrl: sepolia.rpcUrl, policy: defaultPolicy([FEE_RECIPIENT]), audit });
  return { agent, audit, privateKey, account, pub };
}

const TOKEN_READS = [...ERC20_ABI, ...parseAbi(["function scaledBalanceOf(address user) view returns (uint256)"])] as const;
const tokenRead = (functionName: "balanceOf" | "scaledBalanceOf") => (token: `0x${string}`, who: `0x${string}`) =>
  createPublicClient({ chain: base, transport: viemHttp(fork.rpcUrl) }).readContract({ address: token, abi: TOKEN_READS, functionName, args: [who] });
const balanceOf = tokenRead("balanceOf");
/** an aToken's or a debt token's balance in scaled units (what Aave mints and burns) */
const scaledBalanceOf = tokenRead("scaledBalanceOf");
/** USDC's reserve indexes as last stored: those the last supply or borrow in the reserve ran at */
const usdcIndexes = async () => {
  const r = await createPublicClient({ chain: base, transport: viemHttp(fork.rpcUrl) }).readContract({
    address: AaveV3Base.POOL,
    abi: AAVE_POOL_ABI,
    functionName: "getReserveData",
    args: [AaveV3Base.ASSETS.USDC.UNDERLYING],
  });
  return { liquidity: r.liquidityIndex, debt: r.variableBorrowIndex };
};

describe("the loop", () => {
  it("an agent with only a key pays with x402 for a deposit, signs and relays it, and its aUSDC rises by the amount less the 2% fee", async () => {
    const { agent, audit, account } = await newAgent();
    const usdcBefore = await sepolia.balanceOf(account.address);
    const aBefore = await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address);
    const feeBefore = await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, FEE_RECIPIENT);
    const result = await agent.run("deposit", 500);
    expect(result.receipts.every((r) => r.simulated === false && r.status === "confirmed")).toBe(true);
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address)).toBe(aBefore + 490_000_000n);
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, FEE_RECIPIENT)).toBe(feeBefore + 10_000_000n); // 2% of 500
    expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 50_000n); // the x402 price of a deposit
    // the receipts carry the real hashes of mined transactions
    const pub = createPublicClient({ chain: base, transport: viemHttp(fork.rpcUrl) });
    for (const r of result.receipts) expect((await pub.getTransactionReceipt({ hash: r.tx_hash as Hex })).status).toBe("success");
    expect(audit.entries().filter((e) => e.event === "signed")).toHaveLength(3);
    // the gateway's view of the treasury is Aave's
    const state = (await (await fetch(`${gw.url}/api/v1/treasuries/${result.envelope.treasury_id}`)).json()) as { state: unknown };
    expect(state.state).toMatchObject({ environment: "chain", ltv: 0 });
  });

  it("a route paid once is paid up front next time (one request, charged once); a challenge gone stale is refused free, then paid the stock way", async () => {
    // a proxy between agent and gateway noting each deposit request: whether it carried a payment, and its answer
    const seen: { paid: boolean; status: number }[] = [];
    const proxy = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", async () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k))) as Record<
          string,
          string
        >;
        const upstream = await fetch(`${gw.url}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body });
        if (req.url === "/api/v1/deposits") seen.push({ paid: "x-payment" in req.headers, status: upstream.status });
        res.writeHead(
          upstream.status,
          Object.fromEntries([...upstream.headers.entries()].filter(([k]) => !["content-length", "content-encoding", "transfer-encoding"].includes(k))),
        );
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      const { agent, account } = await newAgent(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      const usdcBefore = await sepolia.balanceOf(account.address);
      await agent.run("deposit", 100);
      expect(seen).toEqual([
        { paid: false, status: 402 },
        { paid: true, status: 202 },
      ]);
      seen.length = 0;
      await agent.run("deposit", 100);
      expect(seen).toEqual([{ paid: true, status: 202 }]);
      expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 2n * 50_000n);
      // the route's requirements as the agent remembers them no longer match the gateway's (a lower price)
      const challenges = (agent as unknown as { challenges: Map<string, { accepts: { maxAmountRequired: string }[] }> }).challenges;
      for (const c of challenges.values()) for (const a of c.accepts) a.maxAmountRequired = "40000";
      seen.length = 0;
      await agent.run("deposit", 100);
      expect(seen).toEqual([
        { paid: true, status: 402 },
        { paid: false, status: 402 },
        { paid: true, status: 202 },
      ]);
      expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 3n * 50_000n);
    } finally {
      proxy.close();
    }
  });

  it("a borrow against WETH collateral moves real debt tokens", async () => {
    const { agent, account } = await newAgent();
    await agent.run("convert", 3000, { target: "eth" });
    const aWeth = await balanceOf(AaveV3Base.ASSETS.WETH.A_TOKEN, account.address);
    expect(aWeth).toBeGreaterThan(9n * 10n ** 17n); // about 0.98 WETH at $3000, less slippage
    // the swap was real: what the sandbox delivered ahead for a one-signature client went back to the pool
    expect(await balanceOf(AaveV3Base.ASSETS.WETH.UNDERLYING, account.address)).toBeLessThan(5n * 10n ** 16n);
    const debtBefore = await scaledBalanceOf(AaveV3Base.ASSETS.USDC.V_TOKEN, account.address);
    const result = await agent.run("borrow", 1000);
    // 3.6 mints the debt's scaled amount rounded up, at the index the borrow ran at
    expect(await scaledBalanceOf(AaveV3Base.ASSETS.USDC.V_TOKEN, account.address)).toBe(
      debtBefore + vTokenMintScaled(1_000_000_000n, (await usdcIndexes()).debt),
    );
    // exact on-chain figures (Aave's USD base, 8 decimals): 1000 USD of debt, within 0.0005 USD
    const off = result.onChain!.debt_base - 100_000_000_000n;
    expect(off < 0n ? -off : off).toBeLessThan(50_000n);
    expect(result.receipts.at(-1)!.result.resulting_ltv).toBeCloseTo(Number((result.onChain!.debt_base * 10_000n) / result.onChain!.collateral_base) / 100, 1);
  });

  it("a borrow over the ceiling is refused with 403 before anything is signed, and charged nothing", async () => {
    const { agent, audit, account } = await newAgent();
    const before = await sepolia.balanceOf(account.address);
    const err = await agent.run("borrow", 5000).catch((e) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect(err.body).toMatchObject({ error: "ltv_limit_exceeded", safe_amount: 0 });
    expect(audit.entries().filter((e) => e.event === "signed")).toHaveLength(0);
    expect(await sepolia.balanceOf(account.address)).toBe(before);
  });

  it("an envelope tampered in transit is refused by the agent", async () => {
    // a proxy between agent and gateway that makes the supply credit someone else
    const thief = "0x000000000000000000000000000000000000bEEF";
    const proxy = http.createServer(async (req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", async () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k))) as Record<
          string,
          string
        >;
        const upstream = await fetch(`${gw.url}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body });
        let text = await upstream.text();
        if (req.url === "/api/v1/deposits" && upstream.status === 202) {
          const env = JSON.parse(text);
          const supply = env.steps.find((s: any) => s.kind === "pool_call");
          supply.unsigned_transaction.data = supply.unsigned_transaction.data.replace(
            env.treasury_id ? supply.unsigned_transaction.data.slice(-104, -64) : "",
            thief.slice(2).toLowerCase(),
          );
          text = JSON.stringify(env);
        }
        res.writeHead(
          upstream.status,
          Object.fromEntries([...upstream.headers.entries()].filter(([k]) => !["content-length", "content-encoding", "transfer-encoding"].includes(k))),
        );
        res.end(text);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      const { agent, audit } = await newAgent(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      const err = await agent.run("deposit", 200).catch((e) => e);
      expect(err).toBeInstanceOf(RefusedError);
      expect(err.stage).toBe("policy");
      expect(err.message).toMatch(/supply on behalf of 0x000000000000000000000000000000000000bEEF/i);
      expect(audit.entries().filter((e) => e.event === "signed")).toHaveLength(0);
      expect(audit.entries().at(-1)).toMatchObject({ event: "refused" });
    } finally {
      proxy.close();
    }
  });

  it("a transaction signed by another key is refused by the relay", async () => {
    const { agent } = await newAgent();
    const envelope = await agent.request("deposit", 150);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const step = envelope.steps[0]!;
    const signed = await stranger.signTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: 0,
      to: step.unsigned_transaction.to,
      data: step.unsigned_transaction.data,
      gas: 100_000n,
      maxFeePerGas: 10n ** 9n,
      maxPriorityFeePerGas: 1n,
    });
    const err = await agent.relay(step.tx_id, signed).catch((e) => e);
    expect(err.body).toMatchObject({ error: "signer_mismatch" });
    clock.advance(15 * 60 * 1000); // free the treasury for the next tests
  });

  it("an expired envelope gives 410", async () => {
    const { agent } = await newAgent();
    const envelope = await agent.request("deposit", 150);
    const signed = await agent.signStep(envelope.steps[0]!);
    clock.advance(15 * 60 * 1000);
    const err = await agent.relay(envelope.steps[0]!.tx_id, signed).catch((e) => e);
    expect(err.body).toMatchObject({ error: "envelope_expired" });
  });

  it("killing the gateway between signing and relaying loses nothing and executes once", async () => {
    const { agent, account } = await newAgent();
    const envelope = await agent.request("borrow", 0.5).catch((e) => e);
    // no collateral yet: the rail refuses before any envelope exists; deposit first
    expect(envelope).toBeInstanceOf(RefusedError);
    expect(envelope.body).toMatchObject({ error: "ltv_limit_exceeded", safe_amount: 0 });
    const deposit = await agent.request("deposit", 300);
    const signed = [];
    for (const step of deposit.steps.slice(0, 1)) signed.push(await agent.signStep(step));
    // the gateway dies after the agent signed, before it relayed; a new process starts on the same database
    gw = await gw.restart({ samePort: true });
    const r1 = await agent.relay(deposit.steps[0]!.tx_id, signed[0] as Hex);
    expect(r1).toMatchObject({ status: "confirmed", simulated: false });
    // relayed again (an agent that never saw the answer): the same receipt, nothing twice
    const again = await agent.relay(deposit.steps[0]!.tx_id, signed[0] as Hex);
    expect(again).toEqual(r1);
    for (const step of deposit.steps.slice(1)) await agent.relay(step.tx_id, await agent.signStep(step));
    const pub = createPublicClient({ chain: base, transport: viemHttp(fork.rpcUrl) });
    expect(await pub.getTransactionCount({ address: account.address })).toBe(3);
    // 294 USDC supplied once: 3.6 mints its scaled amount rounded down, and the balance reads it back rounded down
    const { liquidity } = await usdcIndexes();
    const scaled = await scaledBalanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address);
    expect(scaled).toBe(aTokenMintScaled(294_000_000n, liquidity));
    const income = await pub.readContract({
      address: AaveV3Base.POOL,
      abi: AAVE_POOL_ABI,
      functionName: "getReserveNormalizedIncome",
      args: [AaveV3Base.ASSETS.USDC.UNDERLYING],
    });
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, account.address)).toBe(aTokenBalance(scaled, income));
    const audit = await gw.ctx.stores.fees.forTreasury(deposit.treasury_id as string);
    expect(audit).toHaveLength(1);
  });
});

describe("the CLI", () => {
  it("init creates an encrypted keystore and a policy; run deposit 100 ends confirmed on the fork", async () => {
    const { account, privateKey } = await newAgent();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-cli-"));
    const env = {
      ...process.env,
      SIGNER_DIR: dir,
      SIGNER_PASSPHRASE: "correct horse battery",
      SIGNER_DEV_PRIVATE_KEY: privateKey,
      SIGNER_GATEWAY_URL: gw.url,
      SIGNER_RPC_URL: fork.rpcUrl,
      SIGNER_X402_RPC_URL: sepolia.rpcUrl,
    };
    const cli = (args: string[], extraEnv: Record<string, string | undefined> = {}) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), ...args], { cwd: ROOT, env: { ...env, ...extraEnv } });
        let out = "";
        c.stdout.on("data", (d) => (out += d));
        c.stderr.on("data", (d) => (out += d));
        c.on("exit", (code) => resolve({ code, out }));
      });
    const init = await cli(["init", "--dev-raw-key", "--fee-recipient", FEE_RECIPIENT]);
    expect(init.code, init.out).toBe(0);
    const keystore = JSON.parse(fs.readFileSync(path.join(dir, "keystore.json"), "utf8"));
    expect(keystore.version).toBe(3);
    expect(JSON.stringify(keystore)).not.toContain(privateKey.slice(2));
    expect((await cli(["address"], { SIGNER_DEV_PRIVATE_KEY: undefined })).out.trim()).toBe(account.address);
    // without the development flag a raw key is never used: the keystore is
    const run = await cli(["run", "deposit", "100"], { SIGNER_DEV_PRIVATE_KEY: undefined });
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/confirmed on chain/);
    const lines = fs
      .readFileSync(path.join(dir, "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.event === "signed")).toHaveLength(3);
    expect(lines.some((l) => l.event === "x402_payment")).toBe(true);
    const wrongPass = await cli(["run", "deposit", "100"], { SIGNER_DEV_PRIVATE_KEY: undefined, SIGNER_PASSPHRASE: "wrong" });
    expect(wrongPass.code).toBe(1);
    expect(wrongPass.out).not.toContain(privateKey.slice(2));
  }, 60_000);
});

describe("the relay on the fork refuses what would revert", () => {
  it("a signed step that would revert gets a typed error with the decoded reason, and nothing is recorded", async () => {
    const { agent, privateKey, account } = await newAgent();
    clock.advance(15 * 60 * 1000);
    const envelope = await agent.request("repay", 100).catch((e) => e);
    // no debt on Aave: the gateway refuses before any envelope exists
    expect(envelope.body).toMatchObject({ error: "no_debt" });
    const deposit = await agent.request("deposit", 200);
    // relay the fee and the approval, then empty the wallet so the supply reverts
    for (const step of deposit.steps.slice(0, 2)) await agent.relay(step.tx_id, await agent.signStep(step));
    const wallet = createWalletClient({ account, chain: base, transport: viemHttp(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
    const balance = await balanceOf(AaveV3Base.ASSETS.USDC.UNDERLYING, account.address);
    await wallet.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: AaveV3Base.ASSETS.USDC.UNDERLYING,
        abi: ERC20_ABI,
        functionName: "transfer",
        args: [devAccount(5).address, balance],
      }),
    });
    const supply = deposit.steps[2]!;
    const signed = await privateKeyToAccount(privateKey).signTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: await wallet.getTransactionCount({ address: account.address }),
      to: supply.unsigned_transaction.to,
      data: supply.unsigned_transaction.data,
      gas: 500_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 6n,
    });
    const err = await agent.relay(supply.tx_id, signed).catch((e) => e);
    expect(err.body.error).toBe("transaction_would_revert");
    // the fork's USDC (TestUSDC) reverts InsufficientBalance(): selector 0xf4d678b8
    expect(err.body.revert_reason).toBe(`custom error ${toFunctionSelector("InsufficientBalance()")}`);
    expect(await gw.ctx.stores.fees.forTreasury(deposit.treasury_id as string)).toHaveLength(0);
    // and the agent's own preflight catches it before signing
    const refused = await agent.signStep(supply).catch((e) => e);
    expect(refused).toBeInstanceOf(RefusedError);
    expect(refused.stage).toBe("preflight");
  });
});

describe("signer-agent serve", () => {
  it("listens on loopback only and requires its own token", async () => {
    const { serveAgent } = await import("../../signer-agent/src/serve");
    const { agent } = await newAgent();
    const server = await serveAgent(agent, { port: 0, token: "a-long-local-signing-token" });
    try {
      const address = server.address() as AddressInfo;
      expect(address.address).toBe("127.0.0.1");
      const url = `http://127.0.0.1:${address.port}`;
      expect((await fetch(`${url}/address`, { method: "POST" })).status).toBe(401);
      expect((await fetch(`${url}/address`, { method: "POST", headers: { authorization: "Bearer wrong" } })).status).toBe(401);
      const ok = await fetch(`${url}/address`, { method: "POST", headers: { authorization: "Bearer a-long-local-signing-token" } });
      expect(((await ok.json()) as { address: string }).address).toBe(agent.address);
      clock.advance(15 * 60 * 1000);
      const run = await fetch(`${url}/run`, {
        method: "POST",
        headers: { authorization: "Bearer a-long-local-signing-token" },
        body: JSON.stringify({ action: "deposit", amount_usdc: 120 }),
      });
      expect(run.status).toBe(200);
      const refused = await fetch(`${url}/run`, {
        method: "POST",
        headers: { authorization: "Bearer a-long-local-signing-token" },
        body: JSON.stringify({ action: "borrow", amount_usdc: 99999 }),
      });
      expect(refused.status).toBe(403);
    } finally {
      server.close();
    }
  });
});
