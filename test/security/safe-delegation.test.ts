/**
 * Aiming the automation at someone else's Safe (issue 10, finding 2) and the
 * protection engine's rounding and refusals (finding 11), on the offline Base
 * fork with Safe 1.4.1 at its canonical addresses, the project's
 * ProtectionModule and real Aave V3.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delegationStatement, safeMessageFor, statementHash } from "@treasury/core/domain/statements";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { Operator } from "../../signer-agent/src/operator";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { setRow } from "../helpers/rows";
import { authed, registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
let engine: ProtectionEngine;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** a victim operator: its Safe borrows 15,000 USDC against 10 WETH (health 1.65), registered with the Safe's proof, protection delegated */
async function victimSafe() {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(10n * 10n ** 18n);
  await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
  // the Safe proves it stands behind the registration (EIP-1271 through its owner)
  const registered = await call(gw.url, "POST", "/api/v1/treasuries", {
    body: { wallet_address: safe, execution_mode: "managed", ownership_proof: await operator.ownershipProof(gw.url, "managed") },
  });
  expect(registered.status).toBe(200);
  expect(registered.body.ownership).toBe("proven");
  const tenant = { key: registered.body.api_key as string, treasuryId: registered.body.treasury_id as string };
  const module = await operator.deployModule(automation.address, 2500);
  const safe_proof = await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 });
  expect((await authed(gw.url, tenant.key).post("/api/v1/delegation", { module, safe_proof }, null)).status).toBe(200);
  await operator.approveDelegation(module);
  return { operator, safe, module, tenant, api: authed(gw.url, tenant.key) };
}

const mine = (rs: Awaited<ReturnType<ProtectionEngine["tick"]>>, treasuryId: string) => rs.filter((r) => r.treasuryId === treasuryId);

describe("finding 2: delegation needs the Safe's own signature", () => {
  it("an attacker cannot attach the victim's enabled module to its own treasury, nor choose the thresholds", async () => {
    const victim = await victimSafe();
    expect((await victim.api.get("/api/v1/delegation")).body.state).toBe("active");

    // the attacker registers the victim's Safe as a managed treasury of its own (no proof: unproven)
    const attacker = await registerTreasury(gw.url, { wallet_address: victim.safe, execution_mode: "managed" });
    const attackerApi = authed(gw.url, attacker.key);
    // ... and asks for protection below health 3 on the victim's module: with no proof, with its own EOA's signature
    const bare = await attackerApi.post("/api/v1/delegation", { module: victim.module, protect_below_health_score: 3 }, null);
    expect(bare.status).toBe(400);
    const thief = privateKeyToAccount(generatePrivateKey());
    const facts = {
      service: gw.url,
      chain: "base" as const,
      treasuryId: attacker.treasuryId,
      safe: victim.safe,
      module: victim.module,
      protectBelowHealthCentis: 300,
      parkTargetBps: 2500,
      maxSlippageBps: 100,
      nonce: `n_${Date.now()}_attack`,
      issuedAt: new Date().toISOString(),
    };
    const forged = await attackerApi.post(
      "/api/v1/delegation",
      {
        module: victim.module,
        protect_below_health_score: 3,
        safe_proof: {
          signature: await thief.signTypedData(safeMessageFor(victim.safe, 8453, statementHash(delegationStatement(facts)))),
          nonce: facts.nonce,
          issued_at: facts.issuedAt,
        },
      },
      null,
    );
    expect(forged.status).toBe(400);
    expect(forged.body.error).toBe("invalid_safe_proof");
    // the victim's own signature, lifted from its delegation request, names the victim's treasury: it does not fit the attacker's
    const lifted = await victim.operator.delegationProof({
      service: gw.url,
      treasuryId: victim.tenant.treasuryId,
      module: victim.module,
      protectBelowHealth: 1.3,
      parkTargetBps: 2500,
    });
    expect((await attackerApi.post("/api/v1/delegation", { module: victim.module, safe_proof: lifted }, null)).body.error).toBe("invalid_safe_proof");
    expect((await attackerApi.get("/api/v1/delegation")).body).toMatchObject({ state: "not_granted", module: null, protection_actions: [] });

    // health 1.66 is above the victim's 1.3: the engine does nothing to the victim's debt
    const idle = await engine.tick();
    expect(mine(idle, attacker.treasuryId)).toEqual([]);
    expect(mine(idle, victim.tenant.treasuryId).map((r) => r.outcome)).toEqual(["healthy"]);
    // nothing repaid: the debt is the 15,000 borrowed plus seconds of interest (3.6 rounds a debt up, to the micro-USD)
    const debt = (await victim.api.get("/api/v1/treasury")).body.borrowed_usd;
    expect(debt).toBeGreaterThanOrEqual(15_000);
    expect(debt).toBeLessThan(15_000.01);

    // a real fall under 1.3: one action, by the victim's thresholds, recorded on the victim's treasury and shown to it
    await fork.setPrice("WETH", 2_300);
    const acted = await engine.tick();
    expect(mine(acted, victim.tenant.treasuryId).map((r) => r.outcome)).toEqual(["executed"]);
    expect(mine(acted, attacker.treasuryId)).toEqual([]);
    const view = (await victim.api.get("/api/v1/delegation")).body;
    expect(view.protection_actions.filter((a: any) => a.status === "executed")).toHaveLength(1);
    expect((await victim.api.get("/api/v1/audit")).body.data.at(-1)).toMatchObject({ action: "protection", trigger: "protection", fee_usdc: 0 });
    expect((await attackerApi.get("/api/v1/audit")).body.data).toEqual([]);
    // the module's floor(LTV) is never under the park target: no rounding refusal
    const ltv = (await victim.api.get("/api/v1/treasury")).body.ltv;
    expect(ltv).toBeGreaterThanOrEqual(25);
    expect(ltv).toBeLessThan(25.1);
    await fork.setPrice("WETH", 3_000);
  }, 90_000);

  it("one Safe has one delegation: the Safe's own proof moves it to another of its treasuries, and the owner sees every action", async () => {
    const victim = await victimSafe();
    const second = await call(gw.url, "POST", "/api/v1/treasuries", {
      body: { wallet_address: victim.safe, execution_mode: "managed", ownership_proof: await victim.operator.ownershipProof(gw.url, "managed") },
    });
    const proof = await victim.operator.delegationProof({
      service: gw.url,
      treasuryId: second.body.treasury_id,
      module: victim.module,
      protectBelowHealth: 1.3,
      parkTargetBps: 2500,
    });
    expect((await authed(gw.url, second.body.api_key).post("/api/v1/delegation", { module: victim.module, safe_proof: proof }, null)).status).toBe(200);
    const proven = (await gw.ctx.stores.delegations.allProven()).filter((d) => d.safe.toLowerCase() === victim.safe.toLowerCase());
    expect(proven.map((d) => d.treasuryId)).toEqual([second.body.treasury_id]);
    expect((await victim.api.get("/api/v1/delegation")).body.state).toBe("not_granted");
  }, 60_000);
});

describe("the engine's own loop, repaying with aUSDC", () => {
  it("started on an interval, it protects a Safe that holds only aUSDC to repay with (repayWithATokens), once", async () => {
    const victim = await victimSafe();
    // the Safe also supplies 10,000 USDC as collateral and sends its idle USDC away: only aUSDC can repay
    const { AaveV3Base } = await import("@aave-dao/aave-address-book");
    const { encodeFunctionData } = await import("viem");
    const { ERC20_ABI } = await import("@treasury/core/contracts/erc20");
    const { AAVE_POOL_ABI } = await import("@treasury/core/contracts/aave-pool");
    const usdc = AaveV3Base.ASSETS.USDC.UNDERLYING;
    await fork.fund(victim.safe, 15_000_000_000n);
    await victim.operator.execSafe([
      { to: usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [AaveV3Base.POOL, 15_000_000_000n] }) },
      { to: AaveV3Base.POOL, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [usdc, 15_000_000_000n, victim.safe, 0] }) },
      { to: usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [victim.operator.account.address, 15_000_000_000n] }) },
    ]);
    // $2,000 of WETH + 15,000 aUSDC against 15,000 of debt (LTV 88%): only aUSDC can repay, and it is enough
    // for the park target: x = (15,000 - 25% x 17,000) / 75% = 14,333 <= 15,000
    await fork.setPrice("WETH", 200);
    const looping = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    looping.start(100);
    try {
      let actions: any[] = [];
      for (let i = 0; i < 100 && !actions.some((a) => a.status === "executed"); i++) {
        await new Promise((r) => setTimeout(r, 100));
        actions = (await victim.api.get("/api/v1/delegation")).body.protection_actions;
      }
      const executed = actions.filter((a: any) => a.status === "executed");
      expect(executed, JSON.stringify(actions)).toHaveLength(1);
      // one call: repayWithATokens, no approval
      expect(executed[0].tx_hashes).toHaveLength(1);
      const after = (await victim.api.get("/api/v1/treasury")).body;
      expect(after.ltv).toBeGreaterThanOrEqual(25);
      expect(after.ltv).toBeLessThan(25.1);
      // the loop keeps running and does not act again on a restored position
      await new Promise((r) => setTimeout(r, 400));
      expect((await victim.api.get("/api/v1/delegation")).body.protection_actions.filter((a: any) => a.status === "executed")).toHaveLength(1);
    } finally {
      looping.stop();
      await fork.setPrice("WETH", 3_000);
    }
  }, 90_000);
});

describe("finding 11: a refused protection is recorded with its reason and retried", () => {
  it("a repayment the module refuses is recorded decoded, never sent, and tried again on the next pass", async () => {
    const victim = await victimSafe();
    // the treasury's preset now parks lower (15%) than its module allows (25%): the module must refuse
    await setRow(gw.ctx.db, "treasuries", { id: victim.tenant.treasuryId }, { preset: "conservative" });
    await fork.setPrice("WETH", 2_300);
    try {
      const first = mine(await engine.tick(), victim.tenant.treasuryId)[0]!;
      expect(first.outcome).toBe("failed");
      expect(first.detail).toMatch(/OvershotParkTarget\(\d+, 2500\)/);
      const second = mine(await engine.tick(), victim.tenant.treasuryId)[0]!;
      expect(second.outcome).toBe("failed");
      const actions = (await victim.api.get("/api/v1/delegation")).body.protection_actions;
      expect(actions.filter((a: any) => a.status === "failed")).toHaveLength(2);
      // each failure told the treasury, with the module's refusal in words and the trigger
      const failed = (await gw.ctx.stores.events.after(victim.tenant.treasuryId, 0, 500)).filter((e) => e.type === "protection.failed");
      expect(failed).toHaveLength(2);
      expect(failed[0]!.data).toMatchObject({ safe: victim.safe, reason: expect.stringMatching(/OvershotParkTarget/) });
      expect((failed[0]!.data as { trigger: { health_before: number } }).trigger.health_before).toBeLessThan(1.3);
      // only the approval before it was sent (its gas is counted in the monthly ledger); the refused repayment never was
      expect(actions.every((a: any) => a.tx_hashes.length <= 1)).toBe(true);
      expect(await gw.ctx.stores.delegations.monthGasUsd(victim.safe, new Date())).toBeGreaterThan(0);
      expect(actions[0].reason).toMatch(/refused before sending: OvershotParkTarget/);
      // back to the preset the module was made for: the next pass succeeds
      await setRow(gw.ctx.db, "treasuries", { id: victim.tenant.treasuryId }, { preset: "balanced" });
      expect(mine(await engine.tick(), victim.tenant.treasuryId)[0]!.outcome).toBe("executed");
    } finally {
      await fork.setPrice("WETH", 3_000);
    }
  }, 90_000);
});
