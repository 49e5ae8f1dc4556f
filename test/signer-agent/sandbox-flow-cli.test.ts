/**
 * The spec's sandbox flow from the command line, as the README runs it, on a
 * real offline Base fork and a real gateway: `signer-agent register` (the
 * agent signs the gateway's ownership statement, registers, prints only the
 * gateway's JSON on stdout), an action asked for with curl's request and its
 * 202 answer saved, `signer-agent relay <file>|-` (checked as `run` checks,
 * signed, relayed, the receipt on stdout); refusals worded plainly (expired,
 * refused by policy, not stated); `run` with the treasury's key; `summary` and
 * `balance`; a second registration of the same wallet. Everything the CLI
 * printed is scanned for float artefacts at the end.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { ManualClock } from "../../gateway/src/lib/clock";
import { createKeystore } from "../../signer-agent/src/keystore";
import { defaultPolicy } from "../../signer-agent/src/policy";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { textArtefacts } from "../helpers/figures";
import { freshKey } from "../helpers/spec-flow";

const ROOT = path.resolve(__dirname, "../..");
const FEE_RECIPIENT = devAccount(4).address;
const PASSPHRASE = "demo-passphrase-not-secret";
const clock = new ManualClock(new Date());
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-flow-"));
const privateKey = generatePrivateKey();
let fork: BaseForkNode;
let gw: TestGateway;
/** everything the CLI printed a person (stdout and stderr), for the float-artefact scan */
const printed: string[] = [];

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT }, { clock });
  // the demo agent as `npm start` makes it: a keystore, the default policy, USDC and ETH on the fork
  await createKeystore(path.join(dir, "keystore.json"), PASSPHRASE, privateKey);
  fs.writeFileSync(path.join(dir, "policy.json"), JSON.stringify(defaultPolicy([FEE_RECIPIENT])));
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], o: { stdin?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_)/.test(k)));
    const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), ...args], {
      cwd: ROOT,
      env: {
        ...clean,
        STACK_FILE: path.join(dir, "no-stack.json"),
        SIGNER_DIR: dir,
        SIGNER_PASSPHRASE: PASSPHRASE,
        SIGNER_GATEWAY_URL: gw.url,
        SIGNER_RPC_URL: fork.rpcUrl,
        ...o.env,
      },
    });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.stdin.end(o.stdin ?? "");
    c.on("exit", (code) => {
      printed.push(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balanceOf = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });
let wallet: `0x${string}`;
let apiKey: string;
let treasuryId: string;

/** what the README's curl does: the action's request with the treasury's key, its answer saved to a file */
async function ask(route: string, body: Record<string, unknown>): Promise<{ status: number; file: string; body: any }> {
  const r = await call(gw.url, "POST", route, { body, headers: { authorization: `Bearer ${apiKey}`, "idempotency-key": freshKey() } });
  const file = path.join(dir, `${route.split("/").at(-1)}-${freshKey()}.json`);
  fs.writeFileSync(file, r.text);
  return { status: r.status, file, body: r.body };
}

describe("register", () => {
  it("signs the gateway's ownership statement with the agent's key and prints only the gateway's JSON answer on stdout; progress on stderr; the key kept 0600", async () => {
    wallet = (await cli(["address"])).stdout.trim() as `0x${string}`;
    expect(wallet).toBe(privateKeyToAccount(privateKey).address);
    await fork.fund(wallet, 10_000_000_000n);
    const r = await cli(["register"]);
    expect(r.code, r.stderr).toBe(0);
    const answer = JSON.parse(r.stdout);
    expect(answer).toMatchObject({
      object: "treasury",
      wallet_address: wallet,
      execution_mode: "wallet",
      ownership: "proven",
      status: "active",
      chain: "base",
    });
    expect(answer.api_key).toMatch(/^sk_/);
    expect(r.stderr).toContain("signing the statement with the agent's key (EIP-712");
    expect(r.stderr).not.toContain("already stands behind");
    apiKey = answer.api_key;
    treasuryId = answer.treasury_id;
    const record = path.join(dir, "treasury.json");
    expect(fs.statSync(record).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(record, "utf8")).treasuries).toMatchObject([{ treasury_id: treasuryId, api_key: apiKey, execution_mode: "wallet" }]);
  }, 60_000);
});

describe("relay: an envelope asked for with curl", () => {
  it("a deposit's 202 answer from a file: checked, signed, relayed step by step; the receipt on stdout; confirmed on the fork; relayed again it answers the same receipt", async () => {
    const aBefore = await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, wallet);
    const deposit = await ask("/api/v1/deposits", { amount_usdc: 500 });
    expect(deposit.status).toBe(202);
    const r = await cli(["relay", deposit.file]);
    expect(r.code, r.stderr).toBe(0);
    const receipt = JSON.parse(r.stdout);
    expect(receipt).toMatchObject({ object: "relay_receipt", status: "confirmed", simulated: false, result: { action: "deposit", amount_usdc: 500 } });
    expect(r.stderr).toContain(`[1/3] pay the 10 USDC service fee to ${FEE_RECIPIENT}`);
    expect(r.stderr).toContain("[3/3] supply 490 USDC to Aave V3 Pool (base)");
    expect(await balanceOf(AaveV3Base.ASSETS.USDC.A_TOKEN, wallet)).toBeGreaterThanOrEqual(aBefore + 490_000_000n - 1n);
    const again = await cli(["relay", deposit.file]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).tx_hash).toBe(receipt.tx_hash);
    expect(again.stderr).toContain("relayed already");
  }, 120_000);

  it("a conversion from stdin (-): its target is not in the envelope, so relay asks for it, then checks the swap against its own quote; WETH shown to 6 decimals", async () => {
    const convert = await ask("/api/v1/convert", { amount_usdc: 500, target: "eth" });
    expect(convert.status, JSON.stringify(convert.body)).toBe(202);
    const text = fs.readFileSync(convert.file, "utf8");
    const unstated = await cli(["relay", "-"], { stdin: text });
    expect(unstated.code).toBe(2);
    expect(unstated.stderr).toContain(`the convert envelope ${convert.body.tx_id} does not state what it buys: pass --target btc|eth`);
    const r = await cli(["relay", "-", "--target", "eth"], { stdin: text });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ object: "relay_receipt", status: "confirmed", result: { action: "convert" } });
    expect(r.stderr).toMatch(/swap 490 USDC for at least 0\.\d{1,6} WETH/);
    expect(r.stderr).toMatch(/allow Aave V3 Pool \(base\) to take 0\.\d{1,6} WETH/);
  }, 120_000);

  it("refused in plain words: a tampered envelope by the policy (exit 3, nothing signed), an expired one (exit 3), an error answer is not an envelope (exit 2)", async () => {
    const deposit = await ask("/api/v1/deposits", { amount_usdc: 200 });
    expect(deposit.status).toBe(202);
    // the supply credits someone else
    const thief = "000000000000000000000000000000000000beef";
    const tampered = structuredClone(deposit.body);
    const supply = tampered.steps.at(-1).unsigned_transaction;
    supply.data = supply.data.replace(wallet.slice(2).toLowerCase(), thief);
    const tamperedFile = path.join(dir, "tampered.json");
    fs.writeFileSync(tamperedFile, JSON.stringify(tampered));
    const refused = await cli(["relay", tamperedFile]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(
      /^signer-agent relay: refused at policy: supply on behalf of 0x000000000000000000000000000000000000bEEF, not this wallet$/im,
    );
    expect(refused.stdout).toBe("");
    // the same envelope, untouched, after its 15 minutes: the gateway says it expired
    clock.advance(15 * 60 * 1000 + 1000);
    const expired = await cli(["relay", deposit.file]);
    expect(expired.code).toBe(3);
    expect(expired.stderr).toContain(
      `signer-agent relay: refused: envelope ${deposit.body.tx_id} (deposit) has expired (the gateway says so): ask the gateway for the deposit again`,
    );
    // an envelope whose expires_at has passed is refused before anything is signed
    const stale = path.join(dir, "stale.json");
    fs.writeFileSync(stale, JSON.stringify({ ...deposit.body, expires_at: new Date(Date.now() - 60_000).toISOString() }));
    const local = await cli(["relay", stale]);
    expect(local.code).toBe(3);
    expect(local.stderr).toMatch(/envelope tx_[0-9a-f]+ \(deposit\) expired at .*: ask the gateway for the deposit again/);
    // a borrow over the ceiling: the gateway's 403 answer saved instead of an envelope
    const over = await ask("/api/v1/borrow", { amount_usdc: 100_000 });
    expect(over.status).toBe(403);
    const notEnvelope = await cli(["relay", over.file]);
    expect(notEnvelope.code).toBe(2);
    expect(notEnvelope.stderr).toContain("is the gateway's error answer ltv_limit_exceeded");
  }, 120_000);
});

describe("run, balance and summary", () => {
  it("run borrow with the treasury's key: done and the position on chain, figures rounded for a person", async () => {
    const r = await cli(["run", "borrow", "100", "--bearer", apiKey]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^done: borrow 100 USDC, resulting LTV [\d.]+%, tx 0x[0-9a-f]{64} \(confirmed on chain\)$/m);
    expect(r.stdout).toMatch(
      /^on chain: collateral \d+\.\d{2} USD, debt 100\.\d{2} USD, LTV \d+\.\d{2}%, health \d+\.\d{2}; wallet [\d.]+ USDC, supplied [\d.]+ USDC$/m,
    );
    const b = await cli(["balance"]);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toMatch(/collateral +\d+\.\d{2} USD/);
    expect(b.stdout).toMatch(/supplied +[\d.]+ USDC, 0\.\d{1,6} WETH/);
    const j = await cli(["balance", "--json"]);
    expect(JSON.parse(j.stdout)).toMatchObject({ object: "wallet_balance", address: wallet, position: { chain: "base" } });
  }, 120_000);

  it("summary: the treasury, the position, recent executions and fees paid; --json one document", async () => {
    const text = await cli(["summary"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`treasury  ${treasuryId}: wallet mode on base, balanced preset, proven, active`);
    expect(text.stdout).toMatch(/LTV +\d+\.\d{2}%/);
    expect(text.stdout).toMatch(/deposit 500 USDC, fee 10 USDC, tx 0x/);
    // 10 (deposit 500) + 10 (convert 500) + 2 (borrow 100): signed and relayed by this agent, and the gateway's trail agrees
    expect(text.stdout).toContain("fees paid 22 USDC: 22 USDC service fees (signed and relayed), 0 USDC x402 for requests");
    expect(text.stdout).toContain("gateway's audit trail: 3 executions, 22 USDC in fees");
    const json = await cli(["summary", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({
      object: "signer_agent_summary",
      wallet,
      treasury: { treasury_id: treasuryId, execution_mode: "wallet", chain: "base" },
      fees: { service_fees_usdc: "22", x402_usdc: "0", total_usdc: "22" },
      gateway_audit: { executions: 3, fees_usdc: "22" },
    });
    expect(doc.executions.map((e: { action: string }) => e.action)).toEqual(["borrow", "convert", "deposit"]);
    expect(doc.position.debt_usd).toMatch(/^100(\.\d+)?$/);
  }, 60_000);
});

describe("a wallet that already has a treasury", () => {
  it("register --only-if-new refuses naming it (nothing on stdout); register makes another one, says so on stderr, prints only the new JSON", async () => {
    const refused = await cli(["register", "--only-if-new"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(`already registered: ${wallet} already stands behind ${treasuryId} (wallet mode, registered by this agent at`);
    const again = await cli(["register"]);
    expect(again.code, again.stderr).toBe(0);
    const answer = JSON.parse(again.stdout);
    expect(answer.treasury_id).not.toBe(treasuryId);
    expect(again.stderr).toContain(`note: ${wallet} already stands behind ${treasuryId}`);
    expect(again.stderr).toContain("the wallet's x402 payments and sign-ins act on the newest proven registration, this one");
  }, 60_000);
});

describe("numbers a person reads", () => {
  it("nothing the CLI printed in this flow carries float artefacts (runs of 9s or 0s after a decimal point)", () => {
    const all = printed.join("\n");
    expect(all.length).toBeGreaterThan(1000);
    expect(all.match(/\d\.\d*?(9{6,}|0{6,}[1-9])/g) ?? []).toEqual([]);
    // the project's own detector (test/helpers/figures.ts), over the text a person reads
    expect(textArtefacts(all)).toEqual([]);
  });
});
