/**
 * How the protection engine watches, on the Base fork: a pass hands a crossed Safe's trigger to an act and
 * returns before its transaction is mined; engines of one key split the Safes by leased shards (each Safe
 * watched by one engine, none by two) and a stopped engine's shards are taken over once its lease lapses.
 */
import { createTestClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { delegatedSafe } from "../helpers/managed-safe";
import { registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
/** the sharded engines' key: engines of one key are all sharded or one unsharded */
const shardedKey = generatePrivateKey();

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const safeDelegatedAt = (protectBelow: number) => delegatedSafe(fork, gw.url, automation.address, protectBelow);

/** `n` watched Safes without a position: delegation rows written through the store (what the watch reads) */
async function watchedRows(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const wallet = privateKeyToAccount(generatePrivateKey()).address;
    const t = await registerTreasury(gw.url, { wallet_address: wallet });
    await gw.ctx.stores.delegations.attachProven({
      treasuryId: t.treasuryId,
      chain: "base",
      safe: wallet,
      module: privateKeyToAccount(generatePrivateKey()).address,
      automation: privateKeyToAccount(shardedKey).address,
      protectBelowHealth: 1.3,
      proof: { method: "test" },
      at: new Date().toISOString(),
    });
    ids.push(t.treasuryId);
  }
  return ids;
}

const watchedBy = async (e: ProtectionEngine) =>
  new Set((await e.pass({ collect: true })).results.filter((r) => r.detail !== "another automation key").map((r) => r.treasuryId));

describe("the protection engine's watch", () => {
  it("a pass hands the crossed trigger to an act and returns before its transaction is mined", async () => {
    const { tenant, api } = await safeDelegatedAt(1.7); // health 1.65 is under 1.7: crossed
    const engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const anvil = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });
    await anvil.setAutomine(false);
    try {
      const pass = await engine.pass();
      expect(pass.started).toBe(1);
      expect(pass.acting).toBe(1);
      // the act signs and broadcasts on its own; nothing is mined while automine is off
      const deadline = Date.now() + 20_000;
      let pending = 0;
      while (pending === 0 && Date.now() < deadline) {
        const pool = (await anvil.getTxpoolContent()).pending;
        pending = Object.keys(pool).some((from) => from.toLowerCase() === automation.address.toLowerCase()) ? 1 : 0;
        if (pending === 0) await new Promise((r) => setTimeout(r, 50));
      }
      const early = pending === 0 ? await Promise.race([pass.running[0], new Promise((r) => setTimeout(() => r("still running"), 10))]) : undefined;
      expect(pending, `the act's transaction reached the pool (${JSON.stringify(early)})`).toBe(1);
      expect((await gw.ctx.stores.protectionClaims.get(tenant.treasuryId))?.sent.length).toBeGreaterThan(0);
      // a second pass while the act waits: reported in progress, nothing new started
      const again = await engine.pass({ collect: true });
      expect(again.started).toBe(0);
      expect(again.results.find((r) => r.treasuryId === tenant.treasuryId)?.outcome).toBe("in_progress");
      // blocks are mined; the act ends executed, once
      let settled = false;
      const done = engine.settled().then(() => (settled = true));
      while (!settled && Date.now() < deadline + 20_000) {
        await anvil.mine({ blocks: 1 });
        await new Promise((r) => setTimeout(r, 150));
      }
      await done;
    } finally {
      await anvil.setAutomine(true);
    }
    const actions = (await api.get("/api/v1/delegation")).body.protection_actions;
    expect(actions.map((a: { status: string }) => a.status)).toEqual(["executed"]);
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(25);
  }, 90_000);

  it("engines of one key split its Safes by leased shards, and a stopped engine's shards are taken over", async () => {
    const ids = await watchedRows(16);
    const options = { rpcUrls: { base: fork.rpcUrl }, automationKey: shardedKey, shards: 8, shardLeaseMs: 1_500 };
    const a = new ProtectionEngine(gw.ctx, options);
    const b = new ProtectionEngine(gw.ctx, options);
    // a new engine gets its share within a few passes as the first gives shards back; never a Safe watched by both
    const mine = (s: Set<string>) => ids.filter((id) => s.has(id));
    let [byA, byB] = [new Set<string>(), new Set<string>()];
    const shared = () => mine(byA).length + mine(byB).length === ids.length && mine(byA).length > 0 && mine(byB).length > 0;
    for (let round = 0; round < 6 && !shared(); round++) {
      [byA, byB] = [await watchedBy(a), await watchedBy(b)];
      expect(
        mine(byA).filter((id) => byB.has(id)),
        "no Safe watched by both",
      ).toEqual([]);
    }
    expect(mine(byA).length + mine(byB).length, "every Safe watched").toBe(ids.length);
    expect(mine(byA).length).toBeGreaterThan(0);
    expect(mine(byB).length).toBeGreaterThan(0);
    const shards = await gw.ctx.stores.engineShards.owners(new Date());
    expect(new Set(shards.map((s) => s.holder))).toEqual(new Set([a.id, b.id]));

    // b stops taking passes (as a process killed with -9: no release); a takes its shards once their lease lapses
    const t0 = Date.now();
    let all = new Set<string>();
    while (mine(all).length < ids.length && Date.now() - t0 < 10_000) {
      await new Promise((r) => setTimeout(r, 250));
      all = await watchedBy(a);
    }
    expect(mine(all).length, "a watches every Safe after b's death").toBe(ids.length);
    expect(Date.now() - t0).toBeLessThan(10_000);
    await a.stop();
  }, 60_000);
});
