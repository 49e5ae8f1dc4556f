/**
 * A managed Safe on the fork as an operator makes it (signer-agent's Operator, the gateway's API): 10 WETH
 * supplied and 15,000 USDC borrowed (health 1.65 at 3,000 USD), registered as a managed treasury with the Safe's
 * proof, its ProtectionModule deployed for `automation`, the delegation attached at `protectBelow` and approved.
 */
import { generatePrivateKey } from "viem/accounts";
import { expect } from "vitest";
import type { BaseForkNode } from "../../fixtures/base-fork";
import { Operator } from "../../signer-agent/src/operator";
import { authed, registerTreasury } from "./treasury";

export async function delegatedSafe(fork: BaseForkNode, gatewayUrl: string, automation: `0x${string}`, protectBelow: number) {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  const tenant = await registerTreasury(gatewayUrl, {
    wallet_address: safe,
    execution_mode: "managed",
    ownership_proof: await operator.ownershipProof(gatewayUrl, "managed"),
  });
  await operator.fundWeth(10n * 10n ** 18n);
  await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
  const module = await operator.deployModule(automation, 2500);
  const safe_proof = await operator.delegationProof({
    service: gatewayUrl,
    treasuryId: tenant.treasuryId,
    module,
    protectBelowHealth: protectBelow,
    parkTargetBps: 2500,
  });
  const attached = await authed(gatewayUrl, tenant.key).post("/api/v1/delegation", { module, protect_below_health_score: protectBelow, safe_proof }, null);
  expect(attached.status).toBe(200);
  await operator.approveDelegation(module);
  return { operator, safe, module, tenant, api: authed(gatewayUrl, tenant.key) };
}
