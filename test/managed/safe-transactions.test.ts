/**
 * Managed actions on an operator's Safe execute with the owners' signature
 * (issue 15), on the Base fork: a managed deposit answers its 200 receipt
 * (`processing`) and queues one Safe transaction (fee transfer, approval,
 * supply, batched through MultiSendCallOnly); only an owner's signature is
 * taken; the executor executes it once, and the receipt moves to `completed`
 * with the transaction hash, the fee audited; a borrow that breaches the
 * ceiling by the time it is signed fails with the rail's error and nothing is
 * sent; an unsigned one expires.
 */
import { createPublicClient, createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { forkManifest, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { SafeExecutor } from "../../gateway/src/protection/safe-executor";
import { Operator } from "../../signer-agent/src/operator";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { ageRow } from "../helpers/rows";
import { authed, registerTreasury } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
let executor: SafeExecutor;
let rival: SafeExecutor;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);
const m = AAVE_MARKETS.base;
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  executor = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
  // a second executor on the same store and key: the two never execute one Safe transaction twice
  rival = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const client = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balance = (token: `0x${string}`, who: `0x${string}`) => client().readContract({ address: token, abi: ERC20, functionName: "balanceOf", args: [who] });

async function operatorWithSafe() {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  const ownership_proof = await operator.ownershipProof(gw.url, "managed");
  const tenant = await registerTreasury(gw.url, { wallet_address: safe, execution_mode: "managed", ownership_proof });
  return { operator, safe, tenant, api: authed(gw.url, tenant.key) };
}

const mine = (results: Awaited<ReturnType<SafeExecutor["tick"]>>, id: string) => results.filter((r) => r.id === id);

describe("managed actions on a Safe, signed by its owners, executed by the service", () => {
  it("a deposit: 200 processing, one queued Safe transaction, an owner's signature, executed once, completed with its hash", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await fork.fund(safe, 1_000_000_000n); // 1,000 USDC in the Safe
    const feeRecipient = gw.ctx.config.feeRecipient;
    const feeBefore = await balance(m.usdc, feeRecipient);

    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(deposit.status).toBe(200);
    expect(deposit.body).toMatchObject({ object: "action_receipt", action: "deposit", status: "processing", fee_usdc: 10, net_amount: 490 });
    expect(deposit.body.chain_execution).toMatchObject({ simulated: false, safe_transaction: { status: "awaiting_signatures" } });
    const stxId = deposit.body.safe_transaction.id as string;
    // nothing moved yet, and no fee is audited for what has not executed
    expect(await balance(m.usdc, safe)).toBe(1_000_000_000n);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);

    const queue = await api.get("/api/v1/safe-transactions");
    expect(queue.status).toBe(200);
    expect(queue.body.data).toHaveLength(1);
    const q = queue.body.data[0];
    expect(q).toMatchObject({
      id: stxId,
      receipt_id: deposit.body.deposit_id,
      action: "deposit",
      safe,
      status: "awaiting_signatures",
      signatures: [],
      chain_id: 8453,
    });
    expect(q.calls.map((c: any) => c.kind)).toEqual(["fee_transfer", "approval", "pool_call"]);
    expect(q.safe_tx.operation).toBe(1); // the batch, through MultiSendCallOnly
    // the listed hash is the one the Safe itself computes for these fields
    const t = q.safe_tx;
    const onChain = await client().readContract({
      address: safe,
      abi: SAFE_ABI,
      functionName: "getTransactionHash",
      args: [
        t.to,
        BigInt(t.value),
        t.data,
        t.operation,
        BigInt(t.safeTxGas),
        BigInt(t.baseGas),
        BigInt(t.gasPrice),
        t.gasToken,
        t.refundReceiver,
        BigInt(t.nonce),
      ],
    });
    expect(q.safe_tx_hash).toBe(onChain);
    // and the typed data an owner's wallet signs gives that hash's signature
    const typedSignature = await operator.account.signTypedData(q.typed_data);
    expect(typedSignature).toBe(await operator.account.sign({ hash: q.safe_tx_hash }));

    // a new action waits for it
    const second = await api.post("/api/v1/deposits", { amount_usdc: 100 });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ error: "conflicting_operation", pending_safe_transaction_id: stxId });

    // unsigned, nothing executes
    expect(mine(await executor.tick(), stxId)).toEqual([]);
    // a stranger's signature is refused; a malformed one is a typed 400
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature: await stranger.sign({ hash: q.safe_tx_hash }) }, null);
    expect(forged.status).toBe(403);
    expect(forged.body).toMatchObject({ error: "not_an_owner", recovered: stranger.address });
    expect((await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature: "0x1234" }, null)).body.error).toBe("invalid_request");
    // a v the Safe does not take is malformed (the document's pattern); a well-formed one that recovers to no address is wrong, not malformed
    expect((await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature: `0x${"11".repeat(64)}05` }, null)).body.error).toBe("invalid_request");
    const offCurve = await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature: `0x${"00".repeat(64)}1b` }, null);
    expect(offCurve.status, offCurve.text).toBe(403);
    expect(offCurve.body.error).toBe("not_an_owner");
    // another treasury's key does not see it
    const other = await operatorWithSafe();
    expect((await other.api.get(`/api/v1/safe-transactions/${stxId}`)).status).toBe(404);

    // the owner signs (checked against the Safe first), and the service executes it, once, whichever executor gets it
    const signature = await operator.signQueued(q);
    const signed = await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature }, null);
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ signatures: [{ owner: operator.account.address }], confirmations_required: 1, signature: { outcome: "added" } });
    const [a, b] = await Promise.all([executor.tick(), rival.tick()]);
    const outcomes = [...mine(a, stxId), ...mine(b, stxId)];
    expect(
      outcomes.filter((r) => r.outcome === "executed"),
      JSON.stringify(outcomes),
    ).toHaveLength(1);
    expect(
      outcomes.filter((r) => r.outcome !== "executed").every((r) => r.outcome === "in_progress"),
      JSON.stringify(outcomes),
    ).toBe(true);
    const txHash = outcomes.find((r) => r.outcome === "executed")!.txHash!;
    expect((await client().getTransactionReceipt({ hash: txHash })).status).toBe("success");

    // the chain moved: 490 supplied on the Safe's behalf, 10 to the fee recipient
    expect(await balance(m.usdc, safe)).toBe(500_000_000n);
    expect((await balance(m.usdc, feeRecipient)) - feeBefore).toBe(10_000_000n);
    const state = (await api.get("/api/v1/treasury")).body;
    expect(state.holdings?.usdc ?? state.usdc_balance).toBeDefined();
    const receipt = (await api.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body;
    expect(receipt).toMatchObject({
      status: "completed",
      tx_hash: txHash,
      deposit_id: deposit.body.deposit_id,
      safe_transaction: { id: stxId, status: "executed" },
    });
    const audit = (await api.get("/api/v1/audit")).body.data;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: "deposit", fee_usdc: 10, fee_bearing: true });
    const executed = (await api.get(`/api/v1/safe-transactions/${stxId}`)).body;
    expect(executed).toMatchObject({ status: "executed", tx_hash: txHash });
    // what it cost the automation key, for the Safe's monthly gas budget
    expect(executed.gas_usd).toBeGreaterThan(0);
    expect(await gw.ctx.stores.safeTransactions.monthGasUsd(safe, new Date())).toBe(executed.gas_usd);
    // done: no more signatures, nothing open, and the next action may start
    expect((await api.post(`/api/v1/safe-transactions/${stxId}/signatures`, { signature }, null)).body.error).toBe("safe_transaction_not_open");
    expect((await api.get("/api/v1/safe-transactions")).body.data).toHaveLength(0);
    expect((await api.get("/api/v1/safe-transactions?status=all")).body.data).toHaveLength(1);
    expect(mine(await executor.tick(), stxId)).toEqual([]);
  }, 90_000);

  it("a borrow the rail allowed when proposed but refuses when signed fails with the rail's error; nothing is sent; a later one completes", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n); // $30,000 of WETH, 15,000 USDC: LTV 50
    const nonceBefore = await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" });

    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 2_000 });
    expect(borrow.status).toBe(200);
    expect(borrow.body).toMatchObject({ action: "borrow", status: "approved", fee_usdc: 40, current_ltv: 50 });
    const stx = (await api.get("/api/v1/safe-transactions")).body.data[0];
    await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
    // the price falls before it executes: 17,000 / 27,000 = 63% > 60
    await fork.setPrice("WETH", 2_700);
    try {
      expect(mine(await executor.tick(), stx.id)).toMatchObject([{ outcome: "failed" }]);
    } finally {
      await fork.setPrice("WETH", 3_000);
    }
    const failed = (await api.get(`/api/v1/receipts/${borrow.body.borrow_id}`)).body;
    expect(failed).toMatchObject({ status: "failed", failure: { error: "ltv_limit_exceeded" } });
    expect(failed.tx_hash).toBeUndefined();
    expect(await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" })).toBe(nonceBefore);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);

    // at the restored price the next one executes: 98 USDC reach the Safe, 2 the fee recipient
    const walletBefore = await balance(m.usdc, safe);
    const again = await api.post("/api/v1/borrow", { amount_usdc: 100 });
    expect(again.status).toBe(200);
    const next = (await api.get("/api/v1/safe-transactions")).body.data[0];
    expect(next.calls.map((c: any) => c.kind)).toEqual(["pool_call", "fee_transfer"]);
    await api.post(`/api/v1/safe-transactions/${next.id}/signatures`, { signature: await operator.signQueued(next) }, null);
    const ran = mine(await executor.tick(), next.id);
    expect(ran, JSON.stringify(ran)).toMatchObject([{ outcome: "executed" }]);
    expect((await balance(m.usdc, safe)) - walletBefore).toBe(98_000_000n);
    const done = (await api.get(`/api/v1/receipts/${again.body.borrow_id}`)).body;
    expect(done.status).toBe("completed");
    expect(done.ltv_after).toBeGreaterThan(50);
    expect((await api.get("/api/v1/audit")).body.data).toMatchObject([{ action: "borrow", fee_usdc: 2 }]);
    // the log: each proposal waited for signatures; the one refused before sending was never executed, the next was
    const log = (await api.get("/api/v1/events")).body.data as any[];
    const waiting = log.filter((e) => e.type === "safe_transaction.awaiting_signatures");
    expect(waiting.at(-1).data).toMatchObject({ safe_transaction_id: next.id, action: "borrow", amount_usdc: "100", safe });
    expect(log.filter((e) => e.type === "safe_transaction.executed").map((e) => e.data)).toEqual([
      { safe_transaction_id: next.id, status: "executed", tx_hash: ran[0]!.txHash },
    ]);
  }, 90_000);

  it("a convert: fee, approval, swap on Uniswap, approval, supply of the WETH, in one Safe transaction, completed", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await fork.fund(safe, 1_000_000_000n);
    const convert = await api.post("/api/v1/convert", { amount_usdc: 200, target: "eth" });
    expect(convert.status).toBe(200);
    expect(convert.body).toMatchObject({ action: "convert", status: "processing", fee_usdc: 4 });
    const stx = (await api.get("/api/v1/safe-transactions")).body.data[0];
    expect(stx.calls.map((c: any) => c.kind)).toEqual(["fee_transfer", "approval", "swap", "approval", "pool_call"]);
    await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
    const ran = mine(await executor.tick(), stx.id);
    expect(ran, JSON.stringify(ran)).toMatchObject([{ outcome: "executed" }]);
    expect((await api.get(`/api/v1/receipts/${convert.body.conversion_id}`)).body).toMatchObject({ status: "completed", tx_hash: ran[0]!.txHash });
    // 196 USDC became WETH collateral on Aave, on the Safe's behalf
    expect(await balance(m.usdc, safe)).toBe(800_000_000n);
    expect((await api.get("/api/v1/treasury")).body.total_value_usd).toBeGreaterThan(150);
  }, 60_000);

  it("a Safe transaction that would revert on chain fails with the failing call and its decoded reason; nothing is sent", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 1_000n * 10n ** 6n);
    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 100 });
    const stx = (await api.get("/api/v1/safe-transactions")).body.data[0];
    await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
    // the pool admin (the fixture's deployer) disables USDC borrowing after the owner signed: the rail still passes, Aave refuses
    const admin = createWalletClient({ account: devAccount(0), chain: base, transport: http(fork.rpcUrl) }).extend(publicActions);
    const configurator = forkManifest().aave.pool_configurator;
    const setBorrowing = async (enabled: boolean) =>
      admin.waitForTransactionReceipt({
        hash: await admin.writeContract({
          address: configurator,
          abi: parseAbi(["function setReserveBorrowing(address asset, bool enabled)"]),
          functionName: "setReserveBorrowing",
          args: [m.usdc, enabled],
        }),
      });
    await setBorrowing(false);
    try {
      const nonceBefore = await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" });
      const ran = mine(await executor.tick(), stx.id);
      expect(ran).toMatchObject([{ outcome: "failed" }]);
      expect(ran[0]!.detail).toContain("call 1 of 2 (pool_call: Borrow 100 USDC");
      // Aave 3.6 reverts with a custom error of its Errors library, named with its arguments
      expect(ran[0]!.detail).toContain("reverts: BorrowingNotEnabled()");
      expect(await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" })).toBe(nonceBefore);
      const receipt = (await api.get(`/api/v1/receipts/${borrow.body.borrow_id}`)).body;
      expect(receipt).toMatchObject({ status: "failed", failure: { error: "transaction_would_revert" } });
      expect(receipt.failure.message).toContain("BorrowingNotEnabled()");
      expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);
    } finally {
      await setBorrowing(true);
    }
  }, 60_000);

  it("an executor that dies after signing its transaction, before sending it: another takes the lapsed claim over and sends those bytes, once", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await fork.fund(safe, 300_000_000n);
    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 100 });
    const stx = (await api.get("/api/v1/safe-transactions")).body.data[0];
    await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
    const dying = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
    // the process dies between writing the signed transaction on its claim and sending it
    (dying as any).landed = async () => {
      throw new Error("killed");
    };
    expect(mine(await dying.tick(), stx.id)).toMatchObject([{ outcome: "in_progress" }]);
    const claimed = await gw.ctx.stores.safeTransactions.get(stx.id);
    expect(claimed).toMatchObject({ status: "executing" });
    expect(claimed!.sent).not.toBeNull();
    expect(
      await client()
        .getTransaction({ hash: claimed!.sent!.hash })
        .catch(() => null),
    ).toBeNull(); // never sent
    // a live claim is left alone; once its lease lapsed, another executor sends the recorded bytes
    expect(mine(await executor.tick(), stx.id)).toEqual([]);
    await ageRow(gw.ctx.db, "safe_transactions", { id: stx.id }, "lease_expires_at");
    const ran = mine(await executor.tick(), stx.id);
    expect(ran).toMatchObject([{ outcome: "executed", txHash: claimed!.sent!.hash }]);
    expect((await api.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body).toMatchObject({ status: "completed", tx_hash: claimed!.sent!.hash });
    expect(await balance(m.usdc, safe)).toBe(200_000_000n);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(1);
  }, 60_000);

  it("a Safe whose monthly gas budget for executions is spent: the signed transaction fails, nothing sent, no fee", async () => {
    const { operator, safe, api } = await operatorWithSafe();
    await fork.fund(safe, 300_000_000n);
    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 100 });
    const stx = (await api.get("/api/v1/safe-transactions")).body.data[0];
    await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
    const frugal = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey, gasUsdPerMonth: 0 });
    const nonceBefore = await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" });
    const ran = mine(await frugal.tick(), stx.id);
    expect(ran).toMatchObject([{ outcome: "failed" }]);
    expect(ran[0]!.detail).toMatch(/^gas_budget_exhausted: executing it would cost about 0\.\d+ USD of gas/);
    expect(await client().readContract({ address: safe, abi: SAFE_ABI, functionName: "nonce" })).toBe(nonceBefore);
    expect((await api.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body).toMatchObject({ status: "failed", failure: { error: "gas_budget_exhausted" } });
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);
  }, 60_000);

  it("an unsigned one expires: the receipt fails, nothing is executed, the treasury is free again", async () => {
    const { safe, api } = await operatorWithSafe();
    await fork.fund(safe, 200_000_000n);
    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 100 });
    const stxId = deposit.body.safe_transaction.id as string;
    await ageRow(gw.ctx.db, "safe_transactions", { id: stxId });
    expect((await api.get(`/api/v1/safe-transactions/${stxId}`)).body.status).toBe("expired");
    expect(mine(await executor.tick(), stxId)).toMatchObject([{ outcome: "expired" }]);
    expect((await api.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body).toMatchObject({
      status: "failed",
      failure: { error: "safe_transaction_not_open" },
    });
    expect(await balance(m.usdc, safe)).toBe(200_000_000n);
    expect((await api.post("/api/v1/deposits", { amount_usdc: 100 })).status).toBe(200);
  }, 60_000);
});
