/**
 * The protection engine's sender on the Base fork (gateway/src/protection/claim-transactions.ts): nonces the
 * store gives out (two engines with one key, sending at once, sign at distinct nonces and both land), a send
 * that returns before its transaction is mined, and a transaction stuck under a risen base fee replaced at its
 * nonce with higher fees, the trigger's action recorded once. Automine is off in each test: the test mines.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, encodeFunctionData, erc20Abi, http, keccak256, parseTransaction, type Hex, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { chainHealthScore } from "../../gateway/src/chain/chain-gateway";
import { replacementFees } from "../../gateway/src/chain/replacement-fees";
import { awaitLanded, sendCall } from "../../gateway/src/protection/claim-transactions";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { EXECUTE_GAS_LIMIT, type Call } from "../../gateway/src/protection/module-calls";
import { isPlan, planRepayment } from "../../gateway/src/protection/repayment-plan";
import type { EngineParts, Run } from "../../gateway/src/protection/trigger-run";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { ageRow } from "../helpers/rows";
import { delegatedSafe } from "../helpers/managed-safe";

let fork: BaseForkNode;
let gw: TestGateway;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const node = () => createPublicClient({ transport: http(fork.rpcUrl), pollingInterval: 50 });
const rpc = (method: string, params: unknown[] = []) => node().request({ method: method as never, params: params as never });
const mine = () => rpc("evm_mine");
const automine = (on: boolean) => rpc("evm_setAutomine", [on]);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function until<T>(what: string, read: () => Promise<T | undefined | null | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const protectedSafe = (protectBelow: number) => delegatedSafe(fork, gw.url, automation.address, protectBelow);

/** an engine's claimed run on a Safe's trigger, as engine.ts makes it */
async function claimedRun(engine: ProtectionEngine, treasuryId: string): Promise<{ parts: EngineParts; run: Run }> {
  const parts = (engine as unknown as { parts: EngineParts }).parts;
  const d = (await gw.ctx.stores.delegations.get(treasuryId))!;
  const t = (await gw.ctx.stores.treasuries.get(treasuryId))!;
  const claimed = await gw.ctx.stores.protectionClaims.claim(treasuryId, `eng_${Math.random()}`, `fee_${Math.random()}`, new Date());
  if (claimed.kind !== "claimed") throw new Error(`not claimed: ${claimed.kind}`);
  return { parts, run: { d, t, threshold: 1.3, claim: claimed.claim, gasWei: 0n, receipts: new Map(), sentAt: new Map() } };
}

/** a harmless module call: the Safe approves the Pool for 1 micro-USDC */
const approveCall: Call = {
  kind: "approve",
  fn: "execute",
  args: [AaveV3Base.ASSETS.USDC.UNDERLYING, encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [AaveV3Base.POOL, 1n] })],
  gas: EXECUTE_GAS_LIMIT,
};

async function currentFees() {
  const block = await node().getBlock();
  const tip = 1_000_000n;
  return { maxPriorityFeePerGas: tip, maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip };
}

/** the fork's base fee at its start, restored after each test (one raises it) */
let baseFee = 0n;

beforeAll(async () => {
  fork = await startBaseFork();
  baseFee = (await node().getBlock()).baseFeePerGas ?? 0n;
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
}, 60_000);
afterEach(async () => {
  await rpc("anvil_setNextBlockBaseFeePerGas", [`0x${baseFee.toString(16)}`]);
  await mine();
  await automine(true);
});
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

describe("the protection engine's sender", () => {
  it("returns from sendCall before the transaction is mined; awaitLanded then gets its receipt", async () => {
    const { tenant } = await protectedSafe(1.3);
    const engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const { parts, run } = await claimedRun(engine, tenant.treasuryId);
    await automine(false);
    const before = await node().getBlockNumber({ cacheTime: 0 });
    const sent = await sendCall(parts, run, approveCall, await currentFees());
    // signed, on the claim, in the node's pool, and not mined: nothing was waited for
    expect((await gw.ctx.stores.protectionClaims.get(tenant.treasuryId))!.sent).toEqual([sent]);
    expect(await node().getBlockNumber({ cacheTime: 0 })).toBe(before);
    expect((await node().getTransaction({ hash: sent.hash })).blockNumber).toBeNull();
    await expect(node().getTransactionReceipt({ hash: sent.hash })).rejects.toThrow(/could not be found/);
    const landing = awaitLanded(parts, run, sent);
    await sleep(200);
    await mine();
    const receipt = (await landing)!;
    expect(receipt).toMatchObject({ transactionHash: sent.hash, status: "success" });
    expect(run.gasWei).toBe(receipt.gasUsed * receipt.effectiveGasPrice);
    await gw.ctx.stores.protectionClaims.finish(tenant.treasuryId, run.claim.holder);
  }, 60_000);

  it("two engines with one key sending at once sign at distinct nonces, and both land", async () => {
    const [a, b] = await Promise.all([protectedSafe(1.3), protectedSafe(1.3)]);
    const engines = [0, 1].map(() => new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey }));
    const runs = [await claimedRun(engines[0]!, a.tenant.treasuryId), await claimedRun(engines[1]!, b.tenant.treasuryId)];
    await automine(false);
    const pending = await node().getTransactionCount({ address: automation.address, blockTag: "pending" });
    const fees = await currentFees();
    // both read the same pending count from the node; the store gives them distinct nonces
    const sent = await Promise.all(runs.map(({ parts, run }) => sendCall(parts, run, approveCall, fees)));
    expect(sent.map((s) => s.nonce).sort()).toEqual([pending, pending + 1]);
    const landing = Promise.all(runs.map(({ parts, run }, i) => awaitLanded(parts, run, sent[i]!)));
    await sleep(200);
    await mine();
    const receipts = await landing;
    expect(receipts.map((r) => r?.status)).toEqual(["success", "success"]);
    expect(receipts[0]!.blockNumber).toBe(receipts[1]!.blockNumber);
    for (const [i, { run }] of runs.entries()) await gw.ctx.stores.protectionClaims.finish([a, b][i]!.tenant.treasuryId, run.claim.holder);
  }, 90_000);

  it("counts the blocks before a replacement from the block the transaction was signed at, not from the start of the wait", async () => {
    const { tenant } = await protectedSafe(1.3);
    const engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const { parts, run } = await claimedRun(engine, tenant.treasuryId);
    await automine(false);
    const signedAt = await node().getBlockNumber({ cacheTime: 0 });
    const sent = await sendCall(parts, run, approveCall, await currentFees());
    // a block with a risen base fee is mined before the wait starts: the transaction stays pending
    const high = parseTransaction(sent.raw).maxFeePerGas! * 4n;
    await rpc("anvil_setNextBlockBaseFeePerGas", [`0x${high.toString(16)}`]);
    await mine();
    let done = false;
    const landing = awaitLanded(parts, run, sent).finally(() => (done = true));
    while (!done) {
      await sleep(400);
      await mine();
    }
    const receipt = (await landing)!;
    const replacement = await node().getTransaction({ hash: receipt.transactionHash });
    // replaced REPLACE_AFTER_BLOCKS (2) after signedAt, when the latest block was the one after the risen one (its base
    // fee 7/8 of it): twice that plus the tip; counted from the wait's start it came a block later, at 7/8 of that
    expect(replacement.nonce).toBe(sent.nonce);
    const baseFeeThen = (await node().getBlock({ blockNumber: signedAt + 2n })).baseFeePerGas!;
    expect(baseFeeThen).toBe((high * 7n) / 8n);
    expect(replacement.maxFeePerGas).toBe(2n * baseFeeThen + replacement.maxPriorityFeePerGas!);
    await gw.ctx.stores.protectionClaims.finish(tenant.treasuryId, run.claim.holder);
  }, 60_000);

  it("replaces a transaction stuck under a risen base fee at its nonce, with higher fees; the action is recorded once", async () => {
    const { tenant, api } = await protectedSafe(1.7); // health 1.65 is under 1.7: a trigger
    const engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    await automine(false);
    let done = false;
    const ticking = engine.tick().finally(() => (done = true));
    // the engine signed its first transaction and wrote it on the claim
    const first = await until("the first transaction on the claim", async () => (await gw.ctx.stores.protectionClaims.get(tenant.treasuryId))?.sent[0]);
    const firstTx = parseTransaction(first.raw);
    // the next block's base fee rises above what the first transaction will pay: it stays pending
    const high = firstTx.maxFeePerGas! * 4n > 10n ** 9n ? firstTx.maxFeePerGas! * 4n : 10n ** 9n;
    await rpc("anvil_setNextBlockBaseFeePerGas", [`0x${high.toString(16)}`]);
    await mine();
    expect(
      (
        await node()
          .getTransaction({ hash: first.hash })
          .catch(() => null)
      )?.blockNumber ?? null,
    ).toBeNull();
    // blocks keep coming; the engine replaces what stays pending
    while (!done) {
      await mine();
      await sleep(300);
    }
    const [result] = (await ticking).filter((r) => r.treasuryId === tenant.treasuryId);
    expect(result!.outcome, result!.detail).toBe("executed");

    const actions = (await api.get("/api/v1/delegation")).body.protection_actions;
    expect(actions.map((x: { status: string }) => x.status)).toEqual(["executed"]);
    const landed: Hex[] = actions[0].tx_hashes;
    // the first transaction never landed; a replacement at its nonce did, with both fees at least 12.5% higher
    expect(landed).not.toContain(first.hash);
    const replacement = await node().getTransaction({ hash: landed[0]! });
    expect(replacement.nonce).toBe(first.nonce);
    expect(replacement.maxPriorityFeePerGas! * 1000n).toBeGreaterThanOrEqual(firstTx.maxPriorityFeePerGas! * 1125n);
    // priced at the risen base fee: twice the base fee of the block it was built for, which is at least the base fee
    // of the block it landed in (empty blocks only lower it; how many came between depends on the machine's pace)
    const landedIn = await node().getBlock({ blockNumber: replacement.blockNumber! });
    expect(replacement.maxFeePerGas!).toBeGreaterThanOrEqual(2n * landedIn.baseFeePerGas!);
    expect(replacement.maxFeePerGas! * 1000n).toBeGreaterThanOrEqual(firstTx.maxFeePerGas! * 1125n);
    await expect(node().getTransactionReceipt({ hash: first.hash })).rejects.toThrow(/could not be found/);
    expect((await api.get("/api/v1/audit")).body.data.filter((x: { action: string }) => x.action === "protection")).toHaveLength(1);
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(25);
    expect(await gw.ctx.stores.protectionClaims.get(tenant.treasuryId)).toBeUndefined();
  }, 120_000);

  it("a dead engine's claim holding a transaction and its replacement: the successor sends the recorded bytes, one variant lands, the action is recorded once", async () => {
    const { safe, tenant, api } = await protectedSafe(1.7);
    const dead = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const { parts, run } = await claimedRun(dead, tenant.treasuryId);
    // the dead engine's node never got its transactions: it died after writing them on its claim
    const silent: EngineParts = {
      ...parts,
      chain: {
        client: (c: "base") => {
          const real = parts.chain.client(c);
          return new Proxy(real, { get: (t, p) => (p === "sendRawTransaction" ? async () => "0x" : (t as never)[p]) }) as PublicClient;
        },
      } as never,
    };
    const position = await parts.chain.position("base", safe);
    const plan = await planRepayment(parts, {}, run.d, "base", position, chainHealthScore(position));
    if (!isPlan(plan)) throw new Error(`no plan: ${plan.detail}`);
    run.claim.repayMicro = plan.repay;
    run.claim.plan = plan.about;
    run.claim.healthBefore = chainHealthScore(position);
    for (const c of plan.calls) await sendCall(silent, run, c, plan.fees);
    // and the first one's replacement at its nonce (as a wait signs one for a transaction that stays pending)
    const first = run.claim.sent[0]!;
    const { r: _r, s: _s, v: _v, yParity: _y, ...tx } = parseTransaction(first.raw);
    if (tx.type !== "eip1559") throw new Error(`a ${tx.type} transaction`);
    const raw = await automation.signTransaction({
      ...tx,
      ...replacementFees({ maxFeePerGas: tx.maxFeePerGas!, maxPriorityFeePerGas: tx.maxPriorityFeePerGas! }, 0n),
    });
    run.claim.sent.push({ hash: keccak256(raw), raw, nonce: first.nonce, call: first.call });
    expect(await gw.ctx.stores.protectionClaims.record(run.claim, new Date())).toBe(true);
    for (const s of run.claim.sent)
      expect(
        await node()
          .getTransaction({ hash: s.hash })
          .catch(() => null),
      ).toBeNull();

    // its lease lapsed: another engine takes the claim over and sends those bytes
    await ageRow(gw.ctx.db, "protection_claims", { treasury_id: tenant.treasuryId });
    const successor = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const [result] = (await successor.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
    expect(result!.outcome, result!.detail).toBe("executed");
    const landed = await Promise.all(
      run.claim.sent.map((s) =>
        node()
          .getTransactionReceipt({ hash: s.hash })
          .catch(() => null),
      ),
    );
    // of the first nonce's two variants, exactly one is on chain; every recorded nonce landed once; nothing more was signed
    expect(landed.slice(0, 1).concat(landed.slice(-1)).filter(Boolean)).toHaveLength(1);
    expect(landed.filter(Boolean)).toHaveLength(plan.calls.length);
    const actions = (await api.get("/api/v1/delegation")).body.protection_actions;
    expect(actions.map((x: { status: string }) => x.status)).toEqual(["executed"]);
    expect([...actions[0].tx_hashes].sort()).toEqual(
      landed
        .filter(Boolean)
        .map((r) => r!.transactionHash)
        .sort(),
    );
    expect((await api.get("/api/v1/audit")).body.data.filter((x: { action: string }) => x.action === "protection")).toHaveLength(1);
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(25);
  }, 120_000);
});
