/**
 * Managed treasuries on Safe, end to end on the Base fork: the operator creates
 * a Safe, supplies WETH and borrows USDC through it, registers it, approves
 * delegation; the ETH price falls until the health score is under 1.3; the
 * protection engine repays through the module to about 25% LTV, once, with an
 * audit entry; after revocation it can no longer act. Every lifecycle state.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createWalletClient, encodeFunctionData, http, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { FORK_RISK, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { Operator, PROTECTION_MODULE_ABI } from "../../signer-agent/src/operator";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { floatArtefacts } from "../helpers/figures";
import { authed, registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
let engine: ProtectionEngine;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);

const setEth = (address: `0x${string}`) => fork.fund(address);

async function operatorWithSafe() {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await setEth(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  // the Safe proves the registration (EIP-1271): only the Safe's own registration queues its transactions
  const tenant = await registerTreasury(gw.url, {
    wallet_address: safe,
    execution_mode: "managed",
    ownership_proof: await operator.ownershipProof(gw.url, "managed"),
  });
  return { operator, safe, tenant, api: authed(gw.url, tenant.key) };
}

/** POST /api/v1/delegation with the Safe's own signature over the treasury, module and threshold */
async function attach(operator: Operator, tenant: { treasuryId: string; key: string }, module: `0x${string}`, protectBelow?: number) {
  const safe_proof = await operator.delegationProof({
    service: gw.url,
    treasuryId: tenant.treasuryId,
    module,
    protectBelowHealth: protectBelow ?? 1.3,
    parkTargetBps: 2500,
  });
  return authed(gw.url, tenant.key).post(
    "/api/v1/delegation",
    { module, ...(protectBelow ? { protect_below_health_score: protectBelow } : {}), safe_proof },
    null,
  );
}

beforeAll(async () => {
  fork = await startBaseFork();
  await setEth(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

describe("the managed treasury's delegation lifecycle and protection", () => {
  it("protects a Safe whose health falls under 1.3, once, to about 25% LTV, and stops after revocation", async () => {
    const { operator, safe, tenant, api } = await operatorWithSafe();
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);

    // the treasury's state is the Safe's on-chain position; nothing protects it yet, and it says so
    const state = await api.get("/api/v1/treasury");
    // health: $30,000 of WETH at its liquidation threshold against $15,000 of debt, two decimals rounded down
    const healthAt = Math.floor((30_000 * FORK_RISK.WETH.liquidationThresholdBps) / 15_000 / 100) / 100;
    expect(state.body).toMatchObject({ environment: "chain", ltv: 50, health_score: healthAt, borrowed_usd: 15000, auto_repay_active: false });
    expect((await api.get("/api/v1/health")).body).toMatchObject({ environment: "chain", auto_repay_active: false });
    expect((await api.get(`/api/v1/treasuries/${tenant.treasuryId}`)).body.state.environment).toBe("chain");
    // the rail uses Aave's figures; an allowed action answers its 200 receipt and waits for the Safe's owners (safe-transactions.test.ts)
    const rail = await api.post("/api/v1/borrow", { amount_usdc: 5000 });
    expect(rail.status).toBe(403);
    expect(rail.body).toMatchObject({ error: "ltv_limit_exceeded", current_ltv: 50, safe_amount: 3000 });
    const proposed = await api.post("/api/v1/borrow", { amount_usdc: 100 });
    expect(proposed.status).toBe(200);
    expect(proposed.body).toMatchObject({
      object: "action_receipt",
      action: "borrow",
      current_ltv: 50,
      status: "approved",
      fee_usdc: 2,
      safe_transaction: { status: "awaiting_signatures" },
    });
    expect((await api.get("/api/v1/policy-state")).body.delegation.state).toBe("not_granted");

    const module = await operator.deployModule(automation.address, 2500);
    const registered = await attach(operator, tenant, module);
    expect(registered.status).toBe(200);
    expect(registered.body.state).toBe("not_granted"); // registered, not approved: the module is not enabled
    // the engine never acts without active delegation
    await fork.setPrice("WETH", 2_300);
    expect((await engine.tick()).find((r) => r.treasuryId === tenant.treasuryId)?.outcome).toBe("not_active");

    await operator.approveDelegation(module);
    expect((await api.get("/api/v1/delegation")).body.state).toBe("active");
    const policy = (await api.get("/api/v1/policy-state")).body;
    expect(policy.delegation.state).toBe("active");
    expect(policy.protection_status).toBe("active");
    // auto_repay_active: the delegation is active and an engine with its key took a pass within the watch window
    expect((await api.get("/api/v1/treasury")).body.auto_repay_active).toBe(true);
    expect((await api.get("/api/v1/health")).body).toMatchObject({ auto_repay_active: true, protect_below_health_score: 1.3 });
    // no engine beating (its last pass a minute ago): the same delegation protects nothing, and every status says so
    await gw.ctx.stores.instances.beatEngine(engine.id, automation.address, new Date(Date.now() - 60_000));
    expect((await api.get("/api/v1/treasury")).body.auto_repay_active).toBe(false);
    expect((await api.get("/api/v1/health")).body.auto_repay_active).toBe(false);
    expect((await api.get("/api/v1/policy-state")).body).toMatchObject({ protection_status: "inactive", delegation: { state: "active" } });

    // $23,000 of WETH against 15,000 USDC: health 23,000 x 0.83 / 15,000 = 1.273 < 1.3
    const health = await api.get("/api/v1/health");
    expect(health.body.health_score).toBeLessThan(1.3);
    const [result] = (await engine.tick()).filter((r) => r.treasuryId === tenant.treasuryId);
    expect(result!.outcome, result!.detail).toBe("executed");
    const after = await api.get("/api/v1/treasury");
    expect(after.body.ltv).toBeGreaterThanOrEqual(25);
    expect(after.body.ltv).toBeLessThan(25.1);
    expect(after.body.health_score).toBeGreaterThan(3);
    const audit = (await api.get("/api/v1/audit")).body.data;
    expect(audit.at(-1)).toMatchObject({ action: "protection", trigger: "protection", fee_usdc: 0, fee_bearing: false });
    expect(audit.at(-1).amount_usdc).toBeCloseTo(15_000 - 0.25 * 23_000, 0);
    const delegation = (await api.get("/api/v1/delegation")).body;
    expect(delegation.protection_actions.at(-1)).toMatchObject({ status: "executed" });
    expect(delegation.protection_actions.at(-1).tx_hashes).toHaveLength(2);
    // its gas in USD from exact wei x the oracle's price, divided once: no float noise in any figure
    expect(delegation.protection_actions.at(-1).gas_usd).toBeGreaterThan(0);
    for (const route of ["/api/v1/delegation", "/api/v1/treasury", "/api/v1/health", "/api/v1/audit"])
      expect(floatArtefacts((await api.get(route)).body, route)).toEqual([]);
    // the treasury's event log told each step as it happened, the engine's action with its record, trigger and cost
    const log = (await api.get("/api/v1/events?limit=500")).body.data as any[];
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i + 1));
    expect(log.map((e) => e.type)).toContain("safe_transaction.awaiting_signatures");
    expect(log.filter((e) => e.type === "delegation.changed").map((e) => e.data.change)).toEqual(["registered", "approved"]);
    expect(log.find((e) => e.type === "health.zone_changed")?.data).toMatchObject({ previous_zone: null });
    const acted = log.filter((e) => e.type === "protection.acted");
    expect(acted).toHaveLength(1);
    expect(acted[0].data).toMatchObject({
      safe,
      tx_hashes: delegation.protection_actions.at(-1).tx_hashes,
      gas_usd: delegation.protection_actions.at(-1).gas_usd,
    });
    expect(Number(acted[0].data.repaid_usdc)).toBeCloseTo(audit.at(-1).amount_usdc, 2);
    expect(acted[0].data.trigger.health_before).toBeLessThan(1.3);
    expect(acted[0].data.ltv_after).toBe(after.body.ltv);

    // never twice for one trigger: the next pass sees a restored position and does nothing
    expect((await engine.tick()).find((r) => r.treasuryId === tenant.treasuryId)?.outcome).toBe("healthy");
    // a new fall is a new trigger; two concurrent passes act once
    await fork.setPrice("WETH", 700);
    const [a, b] = await Promise.all([engine.tick(), engine.tick()]);
    const outcomes = [...a, ...b].filter((r) => r.treasuryId === tenant.treasuryId).map((r) => r.outcome);
    expect(outcomes).toEqual(["executed"]);
    expect((await api.get("/api/v1/delegation")).body.protection_actions.filter((x: any) => x.status === "executed")).toHaveLength(2);
    // a trigger the engine could not resolve is not retried in a loop: disarmed, it waits for a recovery
    await gw.ctx.stores.delegations.setArmed(tenant.treasuryId, false);
    await fork.setPrice("WETH", 200);
    expect((await engine.tick()).find((r) => r.treasuryId === tenant.treasuryId)?.outcome).toBe("already_acted");

    // a call outside the scope is refused on chain
    const client = createWalletClient({ account: automation, chain: base, transport: http(fork.rpcUrl) }).extend(publicActions);
    await expect(
      client.simulateContract({
        address: module,
        abi: PROTECTION_MODULE_ABI,
        functionName: "execute",
        args: [AaveV3Base.POOL, encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [AaveV3Base.ASSETS.USDC.UNDERLYING, 1n, 2n, 0, safe] })],
      }),
    ).rejects.toThrow(/CallNotAllowed/);

    // revocation: the engine can no longer act
    await fork.setPrice("WETH", 3_000);
    await engine.tick();
    const revoke = await operator.revokeDelegation(module);
    await client.waitForTransactionReceipt({ hash: revoke });
    expect((await api.get("/api/v1/delegation")).body.state).toBe("revoked");
    expect((await api.get("/api/v1/events?limit=500")).body.data.filter((e: any) => e.type === "delegation.changed").map((e: any) => e.data.change)).toEqual([
      "registered",
      "approved",
      "revoked",
    ]);
    // a fall under the trigger again (the watch confirms a crossed Safe on chain): the module is no longer enabled
    await fork.setPrice("WETH", 200);
    expect((await engine.tick()).find((r) => r.treasuryId === tenant.treasuryId)?.outcome).toBe("not_active");
    await fork.setPrice("WETH", 3_000);
  }, 60_000);

  it("approved_pending_funds, and revoked_pending_settlement while an automation transaction is in flight", async () => {
    const { operator, api, tenant } = await operatorWithSafe();
    const module = await operator.deployModule(automation.address, 2500);
    expect((await attach(operator, tenant, module)).status).toBe(200);
    await operator.approveDelegation(module);
    expect((await api.get("/api/v1/delegation")).body.state).toBe("approved_pending_funds");
    await operator.fundWeth(10n ** 18n);
    await operator.supplyAndBorrow(10n ** 18n, 0n);
    expect((await api.get("/api/v1/delegation")).body.state).toBe("active");

    // automine off: the revocation is mined first, then an automation transaction waits in the mempool
    const client = createWalletClient({ account: automation, chain: base, transport: http(fork.rpcUrl), pollingInterval: 50 }).extend(publicActions);
    await client.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const revoke = await operator.revokeDelegation(module);
      await client.request({ method: "evm_mine" as never, params: [] as never });
      expect((await client.waitForTransactionReceipt({ hash: revoke })).status).toBe("success");
      expect((await api.get("/api/v1/delegation")).body.state).toBe("revoked");
      const inFlight = await client.writeContract({
        address: module,
        abi: PROTECTION_MODULE_ABI,
        functionName: "execute",
        args: [
          AaveV3Base.ASSETS.USDC.UNDERLYING,
          encodeFunctionData({
            abi: [
              {
                type: "function",
                name: "approve",
                inputs: [{ type: "address" }, { type: "uint256" }],
                outputs: [{ type: "bool" }],
                stateMutability: "nonpayable",
              },
            ],
            functionName: "approve",
            args: [AaveV3Base.POOL, 1n],
          }),
        ],
        gas: 500_000n,
      });
      expect((await api.get("/api/v1/delegation")).body.state).toBe("revoked_pending_settlement");
      await client.request({ method: "evm_mine" as never, params: [] as never });
      // it settled (and, the module being disabled, reverted): nothing in flight any more
      expect((await client.waitForTransactionReceipt({ hash: inFlight })).status).toBe("reverted");
      expect((await api.get("/api/v1/delegation")).body.state).toBe("revoked");
    } finally {
      await client.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    // approving again brings it back
    await operator.approveDelegation(module);
    expect((await api.get("/api/v1/delegation")).body.state).toBe("active");
  }, 60_000);

  it("respects the gas caps and an operator's tighter protect threshold", async () => {
    const { operator, tenant, api } = await operatorWithSafe();
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n); // health 1.66
    const module = await operator.deployModule(automation.address, 2500);
    // a tighter band: protect below 1.7 instead of the preset's 1.3
    expect((await attach(operator, tenant, module, 1.7)).status).toBe(200);
    await operator.approveDelegation(module);
    const mine = (rs: Awaited<ReturnType<ProtectionEngine["tick"]>>) => rs.find((r) => r.treasuryId === tenant.treasuryId)!;
    // a per-action cap no repayment fits: skipped, nothing sent
    const capped = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey, gasCaps: { perActionUsd: 0.000001, perMonthUsd: 5 } });
    const skipped = mine(await capped.tick());
    expect(skipped.outcome).toBe("skipped");
    expect(skipped.detail).toMatch(/per-action cap/);
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(50);
    // a monthly budget already spent: skipped
    const spent = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey, gasCaps: { perActionUsd: 1, perMonthUsd: 0 } });
    expect(mine(await spent.tick()).detail).toMatch(/gas budget/);
    // within the caps, the tighter threshold acts at health 1.66
    const acted = mine(await engine.tick());
    expect(acted.outcome, acted.detail).toBe("executed");
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(25);
    const actions = (await api.get("/api/v1/delegation")).body.protection_actions;
    expect(actions.filter((a: any) => a.status === "skipped")).toHaveLength(2);
    expect(actions.find((a: any) => a.status === "executed").gas_usd).toBeLessThan(0.25);
  }, 60_000);

  it("two engines on one store (as two processes) act once per trigger", async () => {
    const { operator, tenant, api } = await operatorWithSafe();
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
    const module = await operator.deployModule(automation.address, 2500);
    expect((await attach(operator, tenant, module, 1.7)).status).toBe(200); // health 1.66 is under 1.7: a trigger
    await operator.approveDelegation(module);
    // each engine is its own instance (its own in-process guard), as two engine processes on one database
    const other = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    const [a, b] = await Promise.all([engine.tick(), other.tick()]);
    const mine = [...a, ...b].filter((r) => r.treasuryId === tenant.treasuryId);
    const outcomes = mine.map((r) => r.outcome).sort();
    expect(outcomes[0], JSON.stringify(mine)).toBe("executed");
    expect(["in_progress", "already_acted", "healthy"]).toContain(outcomes[1]);
    const actions = (await api.get("/api/v1/delegation")).body.protection_actions;
    expect(actions.map((x: any) => x.status)).toEqual(["executed"]);
    expect((await api.get("/api/v1/audit")).body.data.filter((x: any) => x.action === "protection")).toHaveLength(1);
    expect((await api.get("/api/v1/treasury")).body.ltv).toBe(25);
    expect(await gw.ctx.stores.protectionClaims.get(tenant.treasuryId)).toBeUndefined();
  }, 60_000);

  it("refuses a module that is not the treasury's", async () => {
    const { operator, tenant } = await operatorWithSafe();
    const wrongAutomation = await operator.deployModule(privateKeyToAccount(generatePrivateKey()).address, 2500);
    const r = await attach(operator, tenant, wrongAutomation);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: "invalid_module", field: "automation" });
    const wrongPark = await operator.deployModule(automation.address, 1000);
    expect((await attach(operator, tenant, wrongPark)).body.field).toBe("park target");
    const notModule = await attach(operator, tenant, AaveV3Base.POOL);
    expect(notModule.status).toBe(400);
    const wallet = await registerTreasury(gw.url, { wallet_address: privateKeyToAccount(generatePrivateKey()).address });
    expect((await attach(operator, wallet, wrongPark)).status).toBe(409);
    const doc = (await call(gw.url, "GET", "/openapi.json")).body.paths["/api/v1/delegation"];
    // documented, bearer-only (a managed treasury's operator key), with the Safe's proof required
    expect(doc.get.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.post.requestBody.content["application/json"].schema.$ref).toBe("#/components/schemas/DelegationRequest");
  });
});
