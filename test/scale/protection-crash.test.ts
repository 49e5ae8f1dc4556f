/**
 * kill -9 of the protection engine in the middle of a repayment, on a fork
 * that mines a block every 2 s as Base does (issue 11). The engine is its own
 * process (gateway/src/protection/main.ts) on the test's store. Before the
 * claims, a repayment mined after the engine died had no protection action and
 * no audit entry, and the next engine re-decided blind. Now the successor takes
 * over the dead engine's claim once its lease lapses, re-sends the recorded
 * bytes, reads the receipt and records the action that landed, once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createTestClient, http, parseAbiItem } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import type { Db } from "../../gateway/src/store/db";
import { DelegationStore } from "../../gateway/src/store/delegation-store";
import { FeeStore } from "../../gateway/src/store/fee-store";
import { openDatabase } from "../../gateway/src/store/open-database";
import { ProtectionClaimStore } from "../../gateway/src/store/protection-claim-store";
import { Operator } from "../../signer-agent/src/operator";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { storeEnv } from "../helpers/gateway-process";
import { authed, registerTreasury } from "../helpers/treasury";

const ROOT = path.resolve(__dirname, "../..");
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const REPAY_EVENT = parseAbiItem("event Repay(address indexed reserve, address indexed user, address indexed repayer, uint256 amount, bool useATokens)");

let fork: BaseForkNode;
let gw: TestGateway;
let db: Db;
const children: ChildProcess[] = [];

/** the protection engine as its own process on the gateway's store */
function engineProcess(): ChildProcess {
  const location = gw.database;
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/protection/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...storeEnv(location),
      BASE_RPC_URL: fork.rpcUrl,
      AUTOMATION_PRIVATE_KEY: automationKey,
      PROTECTION_INTERVAL_MS: "200",
      LEASE_MS: "3000",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return child;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  db = await openDatabase(gw.database);
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await db?.close();
  await gw?.close();
  await fork?.stop();
});

describe("kill -9 of the protection engine during a repayment (2 s blocks)", () => {
  it("the successor records the repayment that landed, once, with its audit entry; nothing is repaid twice", async () => {
    // a managed Safe: $30,000 of WETH, 15,000 USDC borrowed, delegation active
    const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
    await fork.fund(operator.account.address);
    const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    const tenant = await registerTreasury(gw.url, { wallet_address: safe, execution_mode: "managed" });
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
    const module = await operator.deployModule(automation.address, 2500);
    const safe_proof = await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 });
    expect((await authed(gw.url, tenant.key).post("/api/v1/delegation", { module, safe_proof }, null)).status).toBe(200);
    await operator.approveDelegation(module);

    // from here on a block every 2 s; the price falls under the threshold
    const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    const from = await createPublicClient({ chain: base, transport: http(fork.rpcUrl) }).getBlockNumber();
    await fork.setPrice("WETH", 2_300);

    // the engine claims the trigger and sends; it dies once the repayment is signed and on its way
    const first = engineProcess();
    const claims = new ProtectionClaimStore(db);
    const actionsOf = async () => (await new DelegationStore(db).actionsOnSafe(safe)).filter((a) => a.treasuryId === tenant.treasuryId);
    const executed = async () => (await actionsOf()).filter((a) => a.status === "executed");
    const claim = await until("the repayment on the claim", async () => {
      const c = await claims.get(tenant.treasuryId);
      return c?.sent.some((s) => s.call === "repay") ? c : undefined;
    });
    first.kill("SIGKILL");
    expect(claim.state).toBe("broadcasting");
    const repayHash = claim.sent.find((s) => s.call === "repay")!.hash;
    expect(await executed()).toEqual([]);

    // a second engine (as after a restart): it waits out the lease, then settles the dead engine's claim
    engineProcess();
    const done = await until("the recorded action", async () => ((await claims.get(tenant.treasuryId)) === undefined ? executed() : undefined));
    expect(done).toHaveLength(1);
    // let a few more passes and blocks go by: nothing more happens for this trigger
    await new Promise((r) => setTimeout(r, 4_500));

    const actions = await actionsOf();
    expect(actions.map((a) => a.status)).toEqual(["executed"]);
    expect(actions[0]!.txHashes).toContain(repayHash);
    // on chain: one repayment for this Safe, of exactly the recorded amount; the audit says the same, once
    const repays = await createPublicClient({ chain: base, transport: http(fork.rpcUrl) }).getLogs({
      address: AaveV3Base.POOL,
      event: REPAY_EVENT,
      args: { user: safe },
      fromBlock: from,
    });
    expect(repays).toHaveLength(1);
    expect(repays[0]!.transactionHash).toBe(repayHash);
    expect(repays[0]!.args.amount).toBe(actions[0]!.repayMicro);
    const audit = (await new FeeStore(db).forTreasury(tenant.treasuryId)).filter((e) => e.action === "protection");
    expect(audit.map((e) => e.amountMicro)).toEqual([actions[0]!.repayMicro]);
    await test.setAutomine(true);
  }, 90_000);
});
