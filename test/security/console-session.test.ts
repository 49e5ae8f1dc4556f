/**
 * Finding 7: a console session (sk_console_, 8 hours) outlived its owner's
 * removal from the Safe: the key was bound to the treasury only, and the
 * owner was checked once, at sign-in. Now each write made with a console key
 * reads `isOwner(owner)` on the Safe first (one eth_call), and a read does so
 * when the last confirmation of that key is older than 60 seconds; an owner
 * who is gone has the key revoked at once: refused from then on with
 * `401 owner_removed`, whatever is asked. Another owner's session goes on.
 * On the offline Base fork with Safe 1.4.1: the Safe's remaining owner signs
 * and executes the real `removeOwner` Safe transaction.
 */
import { createPublicClient, encodeFunctionData, getAddress, http, parseAbi, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ManualClock } from "../../gateway/src/lib/clock";
import { issueApiKey } from "../../gateway/src/services/api-keys";
import { Operator } from "../../signer-agent/src/operator";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, registerTreasury } from "../helpers/treasury";

/** Safe 1.4.1's OwnerManager (called by the Safe on itself, through a Safe transaction) */
const OWNER_MANAGER_ABI = parseAbi([
  "function addOwnerWithThreshold(address owner, uint256 _threshold)",
  "function removeOwner(address prevOwner, address owner, uint256 _threshold)",
  "function getOwners() view returns (address[])",
]);
const SENTINEL_OWNERS = "0x0000000000000000000000000000000000000001";

let fork: BaseForkNode;
let gw: TestGateway;
let v: ResponseValidator;
const clock = new ManualClock(new Date());

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl }, { clock });
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** a new owner's wallet with gas on the fork */
async function wallet(): Promise<{ key: Hex; operator: Operator }> {
  const key = generatePrivateKey();
  const operator = new Operator({ privateKey: key, rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  return { key, operator };
}

const owners = async (safe: `0x${string}`) =>
  (await createPublicClient({ transport: http(fork.rpcUrl) }).readContract({ address: safe, abi: OWNER_MANAGER_ABI, functionName: "getOwners" })).map((o) =>
    getAddress(o),
  );

/** `by` (an owner, threshold 1) signs and executes the Safe transaction that removes `gone` */
async function removeOwner(by: Operator, safe: `0x${string}`, gone: `0x${string}`): Promise<void> {
  const list = await owners(safe);
  const at = list.indexOf(getAddress(gone));
  expect(at).toBeGreaterThanOrEqual(0);
  const prevOwner = at === 0 ? SENTINEL_OWNERS : list[at - 1]!;
  await by.connect(safe);
  await by.execSafe([{ to: safe, data: encodeFunctionData({ abi: OWNER_MANAGER_ABI, functionName: "removeOwner", args: [prevOwner, gone, 1n] }) }]);
  expect(await owners(safe)).not.toContain(getAddress(gone));
}

/** the console's sign-in over HTTP: the service's message, personal_sign by the owner, the session */
async function signIn(key: Hex, safe: `0x${string}`): Promise<string> {
  const owner = privateKeyToAccount(key);
  const statement = await call(gw.url, "GET", `/api/v1/console/sign-in?owner=${owner.address}&safe=${safe}`);
  expect(statement.status, statement.text).toBe(200);
  const signature = await owner.signMessage({ message: statement.body.message });
  const session = await call(gw.url, "POST", "/api/v1/console/sessions", {
    body: { owner: owner.address, safe, nonce: statement.body.nonce, issued_at: statement.body.issued_at, signature },
  });
  expect(session.status, session.text).toBe(200);
  return session.body.session_key as string;
}

/** a console key's calls, each answer checked against the OpenAPI document */
function consoleApi(key: string) {
  const a = authed(gw.url, key);
  return {
    get: async (path: string) => {
      const r = await a.get(path);
      v.check("GET", path, r.status, r.body);
      return r;
    },
    post: async (path: string, body: unknown) => {
      const r = await a.post(path, body);
      v.check("POST", path, r.status, r.body);
      return r;
    },
  };
}

function expectOwnerRemoved(r: { status: number; body: any }, owner: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(401);
  expect(r.body).toMatchObject({ error: "owner_removed", owner: getAddress(owner) });
  expect(r.body.request_id).toEqual(expect.any(String));
  expect(r.body.message).toMatch(/no longer an owner/);
}

describe("finding 7: a console session ends when its owner leaves the Safe", () => {
  it("a removed owner's next write is refused and the key stays refused; the remaining owner's session works", async () => {
    // a Safe of three owners, threshold 1, registered with the Safe's own proof
    const [alice, bob, carol] = [await wallet(), await wallet(), await wallet()];
    const safe = await alice.operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    for (const o of [bob, carol]) {
      await alice.operator.execSafe([
        { to: safe, data: encodeFunctionData({ abi: OWNER_MANAGER_ABI, functionName: "addOwnerWithThreshold", args: [o.operator.account.address, 1n] }) },
      ]);
    }
    expect(await owners(safe)).toHaveLength(3);
    await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await alice.operator.ownershipProof(gw.url, "managed"),
    });
    await fork.fund(safe, 1_000_000_000n); // 1,000 USDC in the Safe

    const aliceApi = consoleApi(await signIn(alice.key, safe));
    const bobApi = consoleApi(await signIn(bob.key, safe));
    const carolApi = consoleApi(await signIn(carol.key, safe));
    // each session works: a read and a write (an estimate changes nothing but is a POST)
    for (const api of [aliceApi, bobApi, carolApi]) {
      expect((await api.get("/api/v1/treasury")).status).toBe(200);
      expect((await api.post("/api/v1/estimate", { action: "deposit", amount_usdc: 100 })).status).toBe(200);
    }

    // the Safe's owners remove Alice: Bob signs and executes removeOwner
    await removeOwner(bob.operator, safe, alice.operator.account.address);

    // Alice's next write: before the fix it queued a deposit on the Safe (200, a Safe transaction for the remaining owners to sign)
    const write = await aliceApi.post("/api/v1/deposits", { amount_usdc: 100 });
    expectOwnerRemoved(write, alice.operator.account.address);
    // and the key stays refused, for reads and writes, also after the cache interval
    expectOwnerRemoved(await aliceApi.get("/api/v1/treasury"), alice.operator.account.address);
    expectOwnerRemoved(await aliceApi.post("/api/v1/estimate", { action: "deposit", amount_usdc: 100 }), alice.operator.account.address);
    const aliceKeys = (await gw.ctx.stores.apiKeys.all()).filter((k) => k.ownerAddress === alice.operator.account.address);
    expect(aliceKeys.map(({ kind, revokedAt, revokedReason }) => ({ kind, revokedAt, revokedReason }))).toEqual([
      { kind: "console", revokedAt: expect.any(String), revokedReason: "owner_removed" },
    ]);
    // nothing was queued by her
    expect((await bobApi.get("/api/v1/safe-transactions?status=all")).body.data).toEqual([]);

    // Bob's session goes on: his write is accepted (a Safe transaction for the owners to sign)
    const deposit = await bobApi.post("/api/v1/deposits", { amount_usdc: 100 });
    expect(deposit.status, deposit.text).toBe(200);
    expect(deposit.body).toMatchObject({ status: "processing", safe_transaction: { status: "awaiting_signatures" } });

    // reads are re-checked at most every 60 s: Carol, removed now, still reads within the interval, never after it
    await removeOwner(bob.operator, safe, carol.operator.account.address);
    expect((await carolApi.get("/api/v1/treasury")).status).toBe(200);
    clock.advance(61_000);
    expectOwnerRemoved(await carolApi.get("/api/v1/treasury"), carol.operator.account.address);
    expectOwnerRemoved(await carolApi.get("/api/v1/treasury"), carol.operator.account.address);
    expect((await bobApi.get("/api/v1/treasury")).status).toBe(200);
    expect(await owners(safe)).toEqual([getAddress(bob.operator.account.address)]);
  }, 120_000);

  it("a console key that cannot be checked is not taken: no owner recorded (401), the Safe's chain not answering (503, the key kept)", async () => {
    // a managed registration on a chain this gateway has no RPC for
    const t = await registerTreasury(gw.url, {
      wallet_address: privateKeyToAccount(generatePrivateKey()).address,
      chain: "arbitrum",
      execution_mode: "managed",
    });
    const owner = privateKeyToAccount(generatePrivateKey()).address;
    const unreadable = await issueApiKey(gw.ctx.stores.apiKeys, {
      kind: "console",
      treasuryId: t.treasuryId,
      ownerAddress: owner,
      now: clock.now(),
      ttlMs: 60_000,
    });
    for (const r of [
      await consoleApi(unreadable.key).get("/api/v1/treasury"),
      await consoleApi(unreadable.key).post("/api/v1/estimate", { action: "deposit", amount_usdc: 100 }),
    ]) {
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body.error).toBe("chain_unavailable");
    }
    expect((await gw.ctx.stores.apiKeys.all()).find((k) => k.id === unreadable.id)?.revokedAt).toBeNull();
    // a session issued before owners were recorded with their keys
    const ownerless = await issueApiKey(gw.ctx.stores.apiKeys, { kind: "console", treasuryId: t.treasuryId, now: clock.now(), ttlMs: 60_000 });
    const r = await consoleApi(ownerless.key).get("/api/v1/treasury");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ error: "unauthorized", message: expect.stringMatching(/names no owner/) });
    // the treasury's own key is not a console session: no check, no chain needed
    expect((await authed(gw.url, t.key).get("/api/v1/policy-state")).status).toBe(200);
  });
});
