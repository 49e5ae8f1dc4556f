/**
 * The signer agent's full loop paid with an x402 session (`--x402-scheme session`): the offline Base fork for
 * the treasury, a local Base Sepolia with the project's facilitator (sessions' keys too) for x402, the gateway
 * offering `batch-settlement` beside `exact`. The agent deposits once (one transaction on Base Sepolia), then
 * pays each later request with a voucher and no transaction; each loop (pay, envelope, sign, relay, read back)
 * lands on the fork. Its channel state is on disk, so a restarted agent (a new process: the command line)
 * continues the same channel instead of depositing again. A deposit never holds more than the day's x402
 * budget has left. Redemption is out of reach here (its policy's count and age far off), so every transaction
 * on Base Sepolia is a deposit.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { createPublicClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base, baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { SignerAgent } from "../../signer-agent/src/agent";
import { defaultPolicy, type Policy } from "../../signer-agent/src/policy";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowsOf } from "../helpers/rows";
import { FACILITATOR_KEYS, SCHEME_ENV } from "../helpers/x402-stack";

const ROOT = path.resolve(__dirname, "../..");
const FEE_RECIPIENT = devAccount(4).address;
/** the x402 price of POST /api/v1/deposits, micro-USDC */
const PRICE = 50_000n;
let fork: BaseForkNode;
let sepolia: BaseSepoliaNode;
let facilitator: Awaited<ReturnType<typeof startFacilitator>>;
let gw: TestGateway;

beforeAll(async () => {
  [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  facilitator = await startFacilitator({ rpcUrl: sepolia.rpcUrl, ...FACILITATOR_KEYS, port: 0 });
  gw = await startTestGateway({
    BASE_RPC_URL: fork.rpcUrl,
    X402_FACILITATOR: "local",
    X402_FACILITATOR_URL: facilitator.url,
    X402_PAY_TO: devAccount(2).address,
    FEE_RECIPIENT,
    ...SCHEME_ENV,
    X402_SESSION_REDEEM_VOUCHERS: "100000",
    X402_SESSION_REDEEM_AMOUNT: "1000000000000",
    X402_SESSION_REDEEM_SECONDS: "300",
  });
}, 90_000);
afterAll(async () => {
  await gw?.close();
  await facilitator?.close();
  await Promise.all([fork?.stop(), sepolia?.stop()]);
});

/** the statuses the gateway answered POST /api/v1/deposits with, from its access log, from line `from` on */
const depositStatuses = (from = 0) =>
  gw
    .logLines()
    .slice(from)
    .filter((l) => (l.req as { url?: string } | undefined)?.url === "/api/v1/deposits")
    .map((l) => (l.res as { statusCode: number }).statusCode);

const sepoliaClient = () => createPublicClient({ chain: baseSepolia, transport: http(sepolia.rpcUrl) });

/** every transaction mined on Base Sepolia in blocks (from, to] */
async function sepoliaTransactions(from: bigint, to: bigint) {
  const txs = [];
  for (let b = from + 1n; b <= to; b++) txs.push(...(await sepoliaClient().getBlock({ blockNumber: b, includeTransactions: true })).transactions);
  return txs;
}

const aUsdc = (who: `0x${string}`) =>
  createPublicClient({ chain: base, transport: http(fork.rpcUrl) }).readContract({
    address: AaveV3Base.ASSETS.USDC.A_TOKEN,
    abi: ERC20_ABI,
    functionName: "balanceOf",
    args: [who],
  });

/** an agent's directory (policy, audit log, channel state), its key funded on both chains */
async function newWallet(policy: Policy = defaultPolicy([FEE_RECIPIENT])) {
  const privateKey = generatePrivateKey();
  const account = privateKeyToAccount(privateKey);
  await fork.fund(account.address, 20_000_000_000n);
  await sepolia.fund(account.address, 10_000_000n);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-session-"));
  fs.writeFileSync(path.join(dir, "policy.json"), JSON.stringify(policy));
  const audit = new AuditLog(path.join(dir, "audit.jsonl"));
  const agent = () =>
    new SignerAgent({ privateKey, gatewayUrl: gw.url, rpcUrl: fork.rpcUrl, x402RpcUrl: sepolia.rpcUrl, policy, audit, x402Scheme: "session" });
  return { privateKey, account, dir, audit, agent };
}

/** `signer-agent <args>` as a new process on the agent's directory */
function cli(args: string[], dir: string, privateKey: Hex): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_)/.test(k)));
    const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), ...args, "--dev-raw-key"], {
      cwd: ROOT,
      env: {
        ...clean,
        STACK_FILE: path.join(dir, "no-stack.json"),
        SIGNER_DIR: dir,
        SIGNER_DEV_PRIVATE_KEY: privateKey,
        SIGNER_GATEWAY_URL: gw.url,
        SIGNER_RPC_URL: fork.rpcUrl,
        SIGNER_X402_RPC_URL: sepolia.rpcUrl,
      },
    });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the signer agent paying with an x402 session", () => {
  it("deposits once for several paid loops, each signed, relayed and on chain; restarted (the command line), it continues the channel", async () => {
    const { privateKey, account, dir, audit, agent } = await newWallet();
    const usdcBefore = await sepolia.balanceOf(account.address);
    const aBefore = await aUsdc(account.address);
    const startBlock = await sepoliaClient().getBlockNumber();
    const logFrom = gw.logLines().length;

    const loop = agent();
    for (let i = 0; i < 3; i++) {
      const result = await loop.run("deposit", 100);
      expect(result.receipts.map((r) => r.status)).toEqual(["confirmed", "confirmed", "confirmed"]);
    }
    expect(await aUsdc(account.address)).toBe(aBefore + 3n * 98_000_000n); // 100 USDC less the 2% fee, three times
    // the first request learnt the route's requirements from its 402; the next two paid up front, one request each
    expect(depositStatuses(logFrom)).toEqual([402, 202, 202, 202]);

    // one transaction on Base Sepolia: the deposit, 20 requests' worth, into the batch-settlement contract
    const deposits = audit.entries().filter((e) => e.event === "x402_deposit");
    expect(deposits).toMatchObject([{ amount_micro: (20n * PRICE).toString(), route: "POST /api/v1/deposits" }]);
    const mined = await sepoliaTransactions(startBlock, await sepoliaClient().getBlockNumber());
    expect(mined.map((t) => [t.hash, t.to?.toLowerCase()])).toEqual([[deposits[0]!.tx_hash, BATCH_SETTLEMENT_ADDRESS.toLowerCase()]]);
    expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 20n * PRICE);
    // three vouchers charged, the price each, their cumulative amounts one price apart
    const paid = audit.entries().filter((e) => e.event === "x402_payment");
    expect(paid.map((e) => [e.amount_micro, e.cumulative_micro, e.scheme])).toEqual(
      [1n, 2n, 3n].map((n) => [PRICE.toString(), (n * PRICE).toString(), "batch-settlement"]),
    );
    const channelId = paid[0]!.channel_id as string;
    expect(fs.existsSync(path.join(dir, "x402-sessions", "client", `${channelId.toLowerCase()}.json`))).toBe(true);
    const channel = async () => (await rowsOf(gw.ctx.db, "x402_channels", { payer: account.address.toLowerCase() }))[0]!;
    expect(await channel()).toMatchObject({ charged: (3n * PRICE).toString(), total_claimed: "0" });

    // a restarted agent: a new process, the same directory, the same channel, a voucher and no deposit; its channel
    // state read from the directory, so the voucher's base is right the first time (no corrective 402)
    const cliFrom = gw.logLines().length;
    const r = await cli(["run", "deposit", "100", "--x402-scheme", "session"], dir, privateKey);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("paying with an x402 session");
    expect(r.stderr).toContain("paid 0.05 USDC with an x402 session voucher");
    expect(r.stderr).not.toContain("deposited");
    expect(r.stdout).toMatch(/^done: deposit 100 USDC, .*confirmed on chain/);
    expect(depositStatuses(cliFrom)).toEqual([402, 202]);
    expect(await aUsdc(account.address)).toBe(aBefore + 4n * 98_000_000n);
    expect(await sepoliaTransactions(startBlock, await sepoliaClient().getBlockNumber())).toHaveLength(1);
    expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 20n * PRICE);
    expect(await channel()).toMatchObject({ charged: (4n * PRICE).toString(), channel_id: channelId.toLowerCase() });
    expect(
      audit
        .entries()
        .filter((e) => e.event === "x402_payment")
        .map((e) => e.cumulative_micro),
    ).toEqual(["50000", "100000", "150000", "200000"]);
    expect(audit.entries().filter((e) => e.event === "x402_deposit")).toHaveLength(1);
  }, 180_000);

  it("a deposit holds no more than the day's x402 budget has left; past the budget the agent refuses before paying", async () => {
    const { account, audit, agent } = await newWallet({ ...defaultPolicy([FEE_RECIPIENT]), x402_daily_budget_usdc: 0.12 });
    const usdcBefore = await sepolia.balanceOf(account.address);
    const loop = agent();
    await loop.run("deposit", 100);
    await loop.run("deposit", 100);
    expect(
      audit
        .entries()
        .filter((e) => e.event === "x402_deposit")
        .map((e) => e.amount_micro),
    ).toEqual(["120000"]);
    expect(await sepolia.balanceOf(account.address)).toBe(usdcBefore - 120_000n);
    // a third request would take the day to 0.15 USDC: refused by the agent, nothing sent
    await expect(loop.run("deposit", 100)).rejects.toMatchObject({ stage: "x402", shortMessage: expect.stringContaining("would exceed today's x402 budget") });
    expect(
      audit
        .entries()
        .filter((e) => e.event === "x402_payment")
        .map((e) => e.amount_micro),
    ).toEqual(["50000", "50000"]);
  }, 120_000);
});
