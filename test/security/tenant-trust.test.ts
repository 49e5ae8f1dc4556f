/**
 * One tenant's registration must never act on another's wallet (attack review,
 * findings 2 and 3 of the tenant review), over real HTTP on the Base fork with
 * real Aave V3 and Safe 1.4.1:
 *
 * - finding 2: a registration without an ownership proof (`unproven`) of
 *   someone else's plain wallet drove the sandbox's chain tools as that wallet
 *   (impersonated managed runs, funding, steps provided without a signature):
 *   the victim's USDC paid the attacker's fee and supply and its position was
 *   pushed to the ceiling. Now the sandbox acts on a wallet only for a
 *   registration that proved it (`proven`, or `paid` by the wallet's own x402
 *   payment); an unproven managed registration keeps a ledger of its own.
 * - finding 3: the SafeTx hash covers the Safe, the calls and the nonce, not
 *   the treasury, so an unproven registration of the same Safe proposing the
 *   same action got the same hash, and the owner's signature posted there
 *   executed the attacker's item while the operator's stayed open. Now only the
 *   Safe's proven registration queues, takes signatures and is executed.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, http, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { newId } from "@treasury/core/lib/ids";
import { SafeExecutor } from "../../gateway/src/protection/safe-executor";
import { Operator } from "../../signer-agent/src/operator";
import { call, startTestGateway, type JsonResponse, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey, registerProven, registerTreasury } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(5).address;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const m = AAVE_MARKETS.base;
const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address, address) view returns (uint256)",
  "function scaledBalanceOf(address) view returns (uint256)",
]);

let fork: BaseForkNode;
let gw: TestGateway;
let doc: ResponseValidator;
let executor: SafeExecutor;

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address, FEE_RECIPIENT });
  doc = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
  executor = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const read = (token: `0x${string}`, fn: "balanceOf" | "scaledBalanceOf", who: `0x${string}`) =>
  pub().readContract({ address: token, abi: ERC20, functionName: fn, args: [who] });

/** a caller bound to a key whose every answer must be a documented response of /openapi.json */
function api(key: string) {
  const checked = async (method: string, path: string, body?: unknown, idempotent = true): Promise<JsonResponse> => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      ...(method === "POST" && idempotent ? { "idempotency-key": newIdempotencyKey() } : {}),
    };
    const r = await call(gw.url, method, path, { ...(body === undefined ? {} : { body }), headers });
    doc.check(method, path, r.status, r.body);
    return r;
  };
  return { get: (path: string) => checked("GET", path), post: (path: string, body: unknown, idempotent = true) => checked("POST", path, body, idempotent) };
}

/** everything of the wallet's on the fork that an action could move, to the atomic unit */
async function chainFacts(wallet: `0x${string}`) {
  const [usdc, aUsdc, aUsdcScaled, debt, debtScaled, eth, nonce, allowance, account] = await Promise.all([
    read(m.usdc, "balanceOf", wallet),
    read(AaveV3Base.ASSETS.USDC.A_TOKEN, "balanceOf", wallet),
    read(AaveV3Base.ASSETS.USDC.A_TOKEN, "scaledBalanceOf", wallet),
    read(AaveV3Base.ASSETS.USDC.V_TOKEN, "balanceOf", wallet),
    read(AaveV3Base.ASSETS.USDC.V_TOKEN, "scaledBalanceOf", wallet),
    pub().getBalance({ address: wallet }),
    pub().getTransactionCount({ address: wallet, blockTag: "pending" }),
    pub().readContract({ address: m.usdc, abi: ERC20, functionName: "allowance", args: [wallet, m.pool] }),
    pub().readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [wallet] }),
  ]);
  return { usdc, aUsdc, aUsdcScaled, debt, debtScaled, eth, nonce, allowance, account: [...account] };
}

describe("finding 2: an unproven registration of someone else's wallet never drives the sandbox's chain tools", () => {
  it("managed: the attacker's deposit and borrow stay on its own ledger; the victim's USDC and Aave position are untouched; the owner still acts on chain", async () => {
    // the victim: its own USDC on the fork, its own proven managed treasury, a position made through it on chain
    const victim = privateKeyToAccount(generatePrivateKey());
    await fork.fund(victim.address, 5_000_000_000n);
    const owner = await registerProven(gw.url, victim, { execution_mode: "managed" });
    expect(owner.body.ownership).toBe("proven");
    const ownerApi = api(owner.key);
    const own = await ownerApi.post("/api/v1/deposits", { amount_usdc: 1000 });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.chain_execution).toMatchObject({ simulated: false });
    const before = await chainFacts(victim.address);
    expect(before.aUsdcScaled).toBeGreaterThan(0n);

    // the attacker registers the victim's wallet as a managed treasury of its own, with no proof
    const attacker = await registerTreasury(gw.url, { wallet_address: victim.address, execution_mode: "managed" });
    const attackerApi = api(attacker.key);
    const registered = (await attackerApi.get(`/api/v1/treasuries/${attacker.treasuryId}`)).body;
    expect(registered).toMatchObject({ ownership: "unproven", execution_mode: "managed" });
    // its state is its own ledger (empty), not the victim's position
    expect
      .soft(registered.state, "an unproven registration's state is its own ledger")
      .toMatchObject({ environment: "sandbox_simulation", usdc_balance: 0, debt_usdc: 0, ltv: 0 });
    const state = (await attackerApi.get("/api/v1/treasury")).body;
    expect.soft(state, "GET /api/v1/treasury of the unproven registration").toMatchObject({ environment: "sandbox_simulation", borrowed_usd: 0, ltv: 0 });

    const deposit = await attackerApi.post("/api/v1/deposits", { amount_usdc: 1000 });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(200);
    expect
      .soft(deposit.body.chain_execution, "the attacker's deposit receipt says where it ran")
      .toMatchObject({ simulated: true, ledger: "own_sandbox_ledger" });
    // up to the ceiling of what it sees: on the old code the victim's position
    const over = await attackerApi.post("/api/v1/borrow", { amount_usdc: 100000 });
    expect(over.status).toBe(403);
    const borrow = await attackerApi.post("/api/v1/borrow", { amount_usdc: over.body.safe_amount });
    expect(borrow.status, JSON.stringify(borrow.body)).toBe(200);
    expect
      .soft(borrow.body.chain_execution, "the attacker's borrow receipt says where it ran")
      .toMatchObject({ simulated: true, ledger: "own_sandbox_ledger" });

    // nothing of the victim's moved: balances, aToken and debt, allowance, nonce, Aave's account data
    const after = await chainFacts(victim.address);
    expect.soft(after.usdc, "the victim's USDC").toBe(before.usdc);
    expect.soft(after.aUsdc, "the victim's aUSDC").toBe(before.aUsdc);
    expect.soft(after.debt, "the victim's USDC debt").toBe(before.debt);
    expect.soft(after.eth, "the victim's gas ETH").toBe(before.eth);
    expect.soft(after.nonce, "the victim's nonce (no transaction sent as the victim)").toBe(before.nonce);
    expect.soft(after.account, "the victim's getUserAccountData").toEqual(before.account);
    // the attacker's own ledger holds its actions
    const ledger = (await attackerApi.get("/api/v1/treasury")).body;
    expect.soft(ledger.environment).toBe("sandbox_simulation");
    expect.soft(ledger.borrowed_usd).toBe(over.body.safe_amount);

    // the proven owner still acts on chain: its borrow is not blocked by anyone else's actions
    const ownBorrow = await ownerApi.post("/api/v1/borrow", { amount_usdc: 100 });
    expect(ownBorrow.status, JSON.stringify(ownBorrow.body)).toBe(200);
    expect(ownBorrow.body.chain_execution).toMatchObject({ simulated: false });
    const afterOwn = await chainFacts(victim.address);
    expect(afterOwn.debtScaled).toBeGreaterThan(before.debtScaled);
    expect(afterOwn.usdc).toBe(after.usdc + 98_000_000n); // 100 borrowed less the 2 USDC cycle fee
  }, 120_000);

  it("wallet mode: for an unproven registration the sandbox funds and prepares nothing at the envelope, and a relayed signature of the wallet spends nothing the wallet held", async () => {
    const victim = privateKeyToAccount(generatePrivateKey());
    await fork.fund(victim.address, 2_000_000_000n); // 2,000 USDC and gas ETH
    const before = await chainFacts(victim.address);

    const attacker = await registerTreasury(gw.url, { wallet_address: victim.address });
    const attackerApi = api(attacker.key);
    // more than the victim holds: the envelope is made (checked against what a signed relay would bring), the wallet untouched
    const big = await attackerApi.post("/api/v1/deposits", { amount_usdc: 50000 });
    expect.soft(big.status, "a deposit above the victim's balance gets its envelope").toBe(202);
    const prepared = await chainFacts(victim.address);
    expect.soft(prepared.usdc, "the victim's USDC after the envelope").toBe(before.usdc);
    expect.soft(prepared.allowance, "the victim's allowance for the Pool (no approval set ahead)").toBe(before.allowance);
    expect.soft(prepared.eth, "the victim's gas ETH").toBe(before.eth);
    expect.soft(prepared.nonce, "the victim's nonce").toBe(before.nonce);

    // the attacker cannot sign as the victim: a relay signed by its own key is refused and funds nothing
    const attackerKey = privateKeyToAccount(generatePrivateKey());
    const own = createWalletClient({ account: attackerKey, chain: base, transport: http(fork.rpcUrl) });
    const u = big.body.unsigned_transaction;
    const forged = await own.signTransaction(await own.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 400_000n, nonce: 0 }));
    const refused = await call(gw.url, "POST", "/api/v1/relay", {
      body: { tx_id: big.body.tx_id, signed_transaction: forged },
      headers: { "idempotency-key": newIdempotencyKey() },
    });
    doc.check("POST", "/api/v1/relay", refused.status, refused.body);
    expect.soft([refused.status, refused.body.error], "a relay signed by another key").toEqual([400, "signer_mismatch"]);
    const afterForged = await chainFacts(victim.address);
    expect.soft(afterForged, "nothing of the victim's moved after a foreign signature").toEqual(prepared);

    // the victim's own signature of the same Pool call (say, lifted from its own flow) is the victim's consent to that call:
    // it runs as signed, and the sandbox pays the fee and the amount on top, so nothing the victim held pays for the
    // steps it did not sign (its USDC is what it was; its supply is the call it signed)
    await gw.ctx.stores.envelopes.setStatus(big.body.tx_id, "expired", null);
    const envelope = await attackerApi.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(envelope.status, JSON.stringify(envelope.body)).toBe(202);
    const wallet = createWalletClient({ account: victim, chain: base, transport: http(fork.rpcUrl) });
    const e = envelope.body.unsigned_transaction;
    const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: e.to, data: e.data, value: BigInt(e.value), gas: 400_000n }));
    const relayed = await call(gw.url, "POST", "/api/v1/relay", {
      body: { tx_id: envelope.body.tx_id, signed_transaction: signed },
      headers: { "idempotency-key": newIdempotencyKey() },
    });
    doc.check("POST", "/api/v1/relay", relayed.status, relayed.body);
    expect.soft(relayed.status, JSON.stringify(relayed.body)).toBe(200);
    const relayedFacts = await chainFacts(victim.address);
    expect.soft(relayedFacts.usdc, "the victim's USDC after the relay (the fee and the amount paid by the sandbox)").toBe(before.usdc);
    expect.soft(relayedFacts.debt, "the victim's USDC debt").toBe(before.debt);
  }, 120_000);
});

describe("finding 3: only the Safe's proven registration queues, takes signatures and is executed", () => {
  let operator: Operator;
  let safe: `0x${string}`;
  let operatorKey: string;
  let attacker: { key: string; treasuryId: string };

  beforeAll(async () => {
    operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
    await fork.fund(operator.account.address);
    safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    await fork.fund(safe, 1_000_000_000n); // 1,000 USDC in the Safe
    const own = await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await operator.ownershipProof(gw.url, "managed"),
    });
    operatorKey = own.key;
    attacker = await registerTreasury(gw.url, { wallet_address: safe, execution_mode: "managed" });
  }, 60_000);

  const safeNonce = () => pub().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" });
  const executionsOf = (treasuryId: string) => gw.ctx.stores.executions.count(treasuryId);

  it("an unproven registration of the Safe cannot queue a Safe transaction: a typed 403, nothing stored", async () => {
    const attackerApi = api(attacker.key);
    const r = await attackerApi.post("/api/v1/deposits", { amount_usdc: 500 });
    expect.soft([r.status, r.body.error], JSON.stringify(r.body)).toEqual([403, "ownership_not_proven"]);
    expect(r.body.request_id).toEqual(expect.any(String));
    expect.soft(await gw.ctx.stores.safeTransactions.list(attacker.treasuryId), "Safe transactions stored for the attacker").toEqual([]);
    expect.soft(Number(await executionsOf(attacker.treasuryId)), "receipts recorded for the attacker").toBe(0);
    expect.soft((await attackerApi.get("/api/v1/safe-transactions?status=all")).body.data).toEqual([]);
    // a borrow (its 403 is documented with the rail's) and an estimate change nothing either
    const borrow = await attackerApi.post("/api/v1/borrow", { amount_usdc: 10 });
    expect.soft([borrow.status, borrow.body.error]).toEqual([403, "ownership_not_proven"]);
  }, 60_000);

  it("the owner's signature posted to another registration's item is refused and that item never executes; the operator's own item executes and its treasury is not blocked", async () => {
    const operatorApi = api(operatorKey);
    const attackerApi = api(attacker.key);
    const nonceBefore = await safeNonce();
    const deposit = await operatorApi.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(200);
    const stxId = deposit.body.safe_transaction.id as string;
    const q = (await operatorApi.get(`/api/v1/safe-transactions/${stxId}`)).body;
    const record = (await gw.ctx.stores.safeTransactions.get(stxId))!;

    // an item of the attacker's registration for the same action at the same nonce (as the old code let it queue):
    // the same SafeTx hash as the operator's
    const foreignId = newId("stx");
    await gw.ctx.stores.safeTransactions.insert({ ...record, id: foreignId, treasuryId: attacker.treasuryId, executionId: newId("dep"), signatures: [] });
    expect((await attackerApi.get(`/api/v1/safe-transactions/${foreignId}`)).body.safe_tx_hash).toBe(q.safe_tx_hash);

    // the owner signs its own item; the same signature posted to the attacker's item is refused
    const signature = await operator.signQueued(q);
    const lifted = await attackerApi.post(`/api/v1/safe-transactions/${foreignId}/signatures`, { signature }, false);
    expect.soft([lifted.status, lifted.body.error], JSON.stringify(lifted.body)).toEqual([403, "ownership_not_proven"]);
    expect.soft((await gw.ctx.stores.safeTransactions.get(foreignId))!.signatures, "signatures stored on the attacker's item").toEqual([]);

    // even an attacker item that carries the owner's signature (accepted before the fix) is never executed
    await gw.ctx.stores.safeTransactions.addSignature(
      foreignId,
      { owner: operator.account.address, signature, submitted_at: new Date().toISOString() },
      new Date().toISOString(),
    );
    const first = (await executor.tick()).filter((x) => x.id === foreignId);
    expect
      .soft(
        first.map((x) => x.outcome),
        "the executor on the attacker's item",
      )
      .toEqual(["failed"]);
    expect.soft(first[0]?.detail ?? "").toMatch(/^ownership_not_proven/);
    expect.soft(await safeNonce(), "the Safe's nonce after the attacker's item").toBe(nonceBefore);
    expect.soft((await attackerApi.get("/api/v1/audit")).body.data, "fees audited on the attacker's treasury").toEqual([]);

    // the operator's own item: signed by the owner, executed, completed, its fee audited
    const signed = await operatorApi.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature }, false);
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    const ran = (await executor.tick()).filter((x) => x.id === stxId);
    expect(
      ran.map((x) => x.outcome),
      JSON.stringify(ran),
    ).toEqual(["executed"]);
    expect(await safeNonce()).toBe(nonceBefore + 1n);
    expect((await operatorApi.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body).toMatchObject({
      status: "completed",
      safe_transaction: { id: stxId, status: "executed" },
    });
    expect((await operatorApi.get("/api/v1/audit")).body.data).toMatchObject([{ action: "deposit", fee_usdc: 10 }]);
    // and nothing of another registration holds the operator's treasury: its next action is queued at once
    const next = await operatorApi.post("/api/v1/deposits", { amount_usdc: 100 });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.safe_transaction).toMatchObject({ status: "awaiting_signatures" });
  }, 120_000);
});
