/**
 * kill -9 of a gateway in the middle of a relay broadcast, on a fork that
 * mines a block every 2 s as Base does (issue 11). Measured before: the
 * transaction was mined with no record, the same-key retry answered 409 "in
 * progress" for 24 h, a new key got 422 `broadcast_rejected`, and a client that
 * re-signed executed the step twice. Now the signer agent keeps relaying the
 * same signed bytes under the same key until a gateway answers; the restarted
 * gateway takes over the key once its lease lapses, reconciles the
 * `broadcasting` step by its hash and answers the receipt. Every step runs once
 * on chain and the audit equals what moved.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createTestClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import type { DatabaseLocation, Db } from "../../gateway/src/store/db";
import { EnvelopeStore } from "../../gateway/src/store/envelope-store";
import { FeeStore } from "../../gateway/src/store/fee-store";
import { openDatabase } from "../../gateway/src/store/open-database";
import { SignerAgent } from "../../signer-agent/src/agent";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { defaultPolicy } from "../../signer-agent/src/policy";
import { gatewayProcess, type GatewayProcess } from "../helpers/gateway-process";
import { rowsOf } from "../helpers/rows";
import { freshDatabase } from "../helpers/store";
import { registerTreasury } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(5).address;
const children: ChildProcess[] = [];
let fork: BaseForkNode;
let location: DatabaseLocation;
let db: Db;

const gatewayOnStore = (port?: number) =>
  gatewayProcess(location, { BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT, RELAY_RECEIPT_TIMEOUT_MS: "10000", ...(port ? { PORT: String(port) } : {}) }, children);

beforeAll(async () => {
  fork = await startBaseFork();
  location = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "relay-crash-")));
  db = await openDatabase(location);
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await db?.close();
  await fork?.stop();
});

describe("kill -9 of a gateway during a relay broadcast (2 s blocks)", () => {
  it("the agent's retry of the same bytes and key gets the receipt from the restarted gateway; every step once", async () => {
    let gw: GatewayProcess = await gatewayOnStore();
    const privateKey = generatePrivateKey();
    const account = privateKeyToAccount(privateKey);
    await fork.fund(account.address, 10_000_000_000n);
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    const port = Number(new URL(gw.url).port);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "relay-crash-agent-"));
    const agent = new SignerAgent({
      privateKey,
      gatewayUrl: gw.url,
      rpcUrl: fork.rpcUrl,
      bearer: t.key,
      policy: defaultPolicy([FEE_RECIPIENT]),
      audit: new AuditLog(path.join(dir, "audit.jsonl")),
      relayRetryMs: 60_000,
    });
    const envelope = await agent.request("deposit", 300);
    expect(envelope.steps.map((s: { kind: string }) => s.kind)).toEqual(["fee_transfer", "approval", "pool_call"]);

    const pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl), pollingInterval: 100 });
    const test = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
    const usdc = (who: `0x${string}`) =>
      pub.readContract({ address: AaveV3Base.ASSETS.USDC.UNDERLYING, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });
    const feeBefore = await usdc(FEE_RECIPIENT);
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    try {
      // the first step is claimed and sent; the gateway dies while it waits for the block
      const first = envelope.steps[0]!;
      const signed = (await agent.signStep(first)) as Hex;
      const relaying = agent.relay(first.tx_id, signed);
      const deadline = Date.now() + 10_000;
      while ((await new EnvelopeStore(db).step(first.tx_id))?.status !== "broadcasting") {
        if (Date.now() > deadline) throw new Error("the step was never claimed");
        await new Promise((r) => setTimeout(r, 10));
      }
      gw.child.kill("SIGKILL");
      // the gateway is back on the same port a moment later; the agent has kept retrying the same bytes and key
      await new Promise((r) => setTimeout(r, 500));
      gw = await gatewayOnStore(port);
      const receipt = await relaying;
      expect(receipt).toMatchObject({ object: "relay_receipt", status: "confirmed", simulated: false, tx_id: first.tx_id });
      const mined = await pub.getTransactionReceipt({ hash: receipt.tx_hash as Hex });
      expect(mined.status).toBe("success");

      // the rest of the envelope, through the restarted gateway
      for (const step of envelope.steps.slice(1)) await agent.relay(step.tx_id, (await agent.signStep(step)) as Hex);
    } finally {
      await test.setAutomine(true);
    }

    // once each on chain: three transactions from the wallet, the fee moved once, the deposit recorded once
    expect(await pub.getTransactionCount({ address: account.address })).toBe(3);
    const audit = await new FeeStore(db).forTreasury(t.treasuryId);
    expect(audit.map((a) => a.action)).toEqual(["deposit"]);
    expect((await usdc(FEE_RECIPIENT)) - feeBefore).toBe(audit[0]!.feeMicro);
    const steps = await new EnvelopeStore(db).steps(envelope.tx_id);
    expect(steps.map((s) => s.status)).toEqual(["relayed", "relayed", "relayed"]);
    // no Idempotency-Key left in progress
    expect((await rowsOf<{ state: string }>(db, "idempotency_keys", {}, { columns: ["key", "state"] })).filter((k) => k.state !== "completed")).toEqual([]);
  }, 120_000);
});
