/**
 * The delegation's state read while the chain mines (gateway/src/services/delegation-service.ts, state()):
 * Safes registered six at a time, each POST /api/v1/delegation reading its Safe's state while the other
 * operators' transactions land, answer 200 every time; only a node that cannot be reached answers 503
 * chain_unavailable.
 */
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { borrower, type Borrower } from "../../bench/protection/safes";
import { busyMarket } from "../helpers/busy-market";
import { startTestGateway, type TestGateway } from "../helpers/gateway";

let fork: BaseForkNode;
let gw: TestGateway;
const automation = privateKeyToAccount(generatePrivateKey());
/** the last Safe registered and its owner's key, for the tests after the first */
let last: Borrower;
let apiKey = "";

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

async function post(route: string, body: unknown, key?: string) {
  const res = await fetch(`${gw.url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function get(route: string, key: string) {
  const res = await fetch(`${gw.url}${route}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** bench/protection/safes.ts's delegate, keeping the delegation's answer and the owner's reads of it after */
async function register(safe: Borrower) {
  const registered = await post("/api/v1/treasuries", {
    wallet_address: safe.safe,
    execution_mode: "managed",
    ownership_proof: await safe.operator.ownershipProof(gw.url, "managed"),
  });
  expect(registered.status).toBe(200);
  const module = await safe.operator.deployModule(automation.address, 2500);
  const safe_proof = await safe.operator.delegationProof({
    service: gw.url,
    treasuryId: registered.body.treasury_id,
    module,
    protectBelowHealth: 1.3,
    parkTargetBps: 2500,
  });
  const answer = await post("/api/v1/delegation", { module, safe_proof }, registered.body.api_key);
  // the approval lands while the other Safes' delegations are read
  await safe.operator.approveDelegation(module);
  apiKey = registered.body.api_key;
  last = safe;
  const reads = [];
  for (let i = 0; i < READS_AFTER; i++) reads.push(await get("/api/v1/delegation", registered.body.api_key));
  return [answer, ...reads];
}

/** the owner's reads of the delegation after registering it */
const READS_AFTER = 20;

describe("the delegation's state while the chain mines", () => {
  it("answers 200 for Safes registered six at a time in a busy market, and for their owners' reads after", async () => {
    const stop = await busyMarket(fork);
    const answers: { status: number; body: Record<string, any> }[] = [];
    try {
      for (let batch = 0; batch < 3; batch++) {
        const safes = await Promise.all(Array.from({ length: 6 }, () => borrower(fork, 12_000n * 10n ** 6n)));
        answers.push(...(await Promise.all(safes.map(register))).flat());
      }
    } finally {
      await stop();
    }
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => `${a.status} ${JSON.stringify(a.body).slice(0, 400)}`)).toEqual([]);
    expect(answers).toHaveLength(18 * (1 + READS_AFTER));
    // registered before the Safe's approval, read after it (its 10 WETH are the funds)
    expect(new Set(answers.map((a) => a.body.state))).toEqual(new Set(["not_granted", "active"]));
  }, 240_000);

  it("promotes a staged upgrade once the Safe enabled its module, its reads at one block", async () => {
    const second = getAddress(await last.operator.deployModule(automation.address, 2500));
    const view = (await get("/api/v1/delegation", apiKey)).body;
    const safe_proof = await last.operator.delegationProof({
      service: gw.url,
      treasuryId: view.treasury_id,
      module: second,
      protectBelowHealth: 1.3,
      parkTargetBps: 2500,
    });
    const staged = await post("/api/v1/delegation", { module: second, safe_proof }, apiKey);
    expect(staged.body).toMatchObject({ state: "active", module: view.module, pending_upgrade: { module: second } });
    const prepared = (await get("/api/v1/delegation/safe-transaction?change=upgrade", apiKey)).body;
    await last.operator.executeUpgrade(prepared as never, second);
    expect((await get("/api/v1/delegation", apiKey)).body).toMatchObject({ state: "active", module: second, pending_upgrade: null });
  });

  // last: it stops the node
  it("answers 503 chain_unavailable when the node cannot be reached", async () => {
    expect((await get("/api/v1/delegation", apiKey)).status).toBe(200);
    await fork.stop();
    const answer = await get("/api/v1/delegation", apiKey);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ error: "chain_unavailable" });
    expect(answer.body.message).toMatch(/^could not read the delegation's state on base: /);
  });
});
