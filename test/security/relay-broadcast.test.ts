/**
 * The relay on the offline Base fork (real Aave V3 at the real addresses),
 * attacked the way a wallet that re-signs, a confused client or a crash would
 * (issue 10, finding 6): two signatures of one step, a future nonce, a receipt
 * that does not come in time (interval mining), a crash between the claim and
 * the broadcast. Money is read on chain.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, newIdempotencyKey, registerTreasury } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(5).address;
let fork: BaseForkNode;
let gw: TestGateway;
let slow: TestGateway;
let pub: any;
let v: ResponseValidator;

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT });
  // a gateway that waits only 300 ms for a receipt (as if blocks came every few seconds)
  slow = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT, RELAY_RECEIPT_TIMEOUT_MS: "300" });
  pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl), pollingInterval: 50 });
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await slow?.close();
  await fork?.stop();
});

interface Step {
  tx_id: string;
  kind: string;
  unsigned_transaction: { chain_id: number; to: Hex; data: Hex; value: string };
}

const usdc = (who: `0x${string}`) => pub.readContract({ address: AaveV3Base.ASSETS.USDC.UNDERLYING, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });
const sign = (account: PrivateKeyAccount, step: Step, nonce: number) =>
  account.signTransaction({
    type: "eip1559",
    chainId: 8453,
    nonce,
    to: step.unsigned_transaction.to,
    data: step.unsigned_transaction.data,
    value: 0n,
    gas: 400_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  });
/** relay one step; every answer must be a documented response of /openapi.json */
const relay = async (g: TestGateway, txId: string, signed: string) => {
  const r = await call(g.url, "POST", "/api/v1/relay", {
    body: { tx_id: txId, signed_transaction: signed },
    headers: { "idempotency-key": newIdempotencyKey() },
  });
  v.check("POST", "/api/v1/relay", r.status, r.body);
  return r;
};
const relayStatus = async (g: TestGateway, txId: string) => {
  const r = await call(g.url, "GET", `/api/v1/relay/${txId}`);
  v.check("GET", `/api/v1/relay/${txId}`, r.status, r.body);
  return r;
};

async function walletWithDeposit(g: TestGateway, amountUsdc = 300) {
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address, 10_000_000_000n);
  const t = await registerTreasury(g.url, { wallet_address: account.address });
  const env = (await authed(g.url, t.key).post("/api/v1/deposits", { amount_usdc: amountUsdc })).body;
  expect(env.status).toBe("awaiting_signature");
  return { account, t, env, steps: env.steps as Step[], api: authed(g.url, t.key) };
}

describe("one step, one broadcast", () => {
  it("two signatures of the same step (nonces n and n+1), relayed at once: one is mined, the other is never sent", async () => {
    const { account, steps } = await walletWithDeposit(gw);
    const feeStep = steps[0]!;
    expect(feeStep.kind).toBe("fee_transfer");
    const before = await usdc(FEE_RECIPIENT);
    const [a, b] = await Promise.all([relay(gw, feeStep.tx_id, await sign(account, feeStep, 0)), relay(gw, feeStep.tx_id, await sign(account, feeStep, 1))]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 409]);
    expect([a, b].find((r) => r.status === 409)!.body.error).toMatch(/step_in_flight|already_relayed|nonce_not_next/);
    // the fee moved once; the wallet used one nonce; nothing waits in the mempool to execute later
    expect(await usdc(FEE_RECIPIENT)).toBe(before + 6_000_000n);
    expect(await pub.getTransactionCount({ address: account.address, blockTag: "latest" })).toBe(1);
    expect(await pub.getTransactionCount({ address: account.address, blockTag: "pending" })).toBe(1);
    // and a late third signature of the same step is refused without being sent
    const late = await relay(gw, feeStep.tx_id, await sign(account, feeStep, 1));
    expect(late.status).toBe(409);
    expect(await pub.getTransactionCount({ address: account.address, blockTag: "pending" })).toBe(1);
  });

  it("a transaction with a future nonce is refused at once with the expected nonce, and is not queued", async () => {
    const { account, steps } = await walletWithDeposit(gw);
    const started = Date.now();
    const r = await relay(gw, steps[0]!.tx_id, await sign(account, steps[0]!, 5));
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "nonce_not_next", expected_nonce: 0, received_nonce: 5 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await pub.getTransactionCount({ address: account.address, blockTag: "pending" })).toBe(0);
    // the right nonce then goes through
    expect((await relay(gw, steps[0]!.tx_id, await sign(account, steps[0]!, 0))).status).toBe(200);
  }, 15_000);
});

describe("a receipt that does not come in time, and a crash after the claim", () => {
  it("answers 202 broadcasting, refuses another signature of the step, and records the action once when it is mined", async () => {
    const { account, t, steps, api } = await walletWithDeposit(slow, 200);
    await pub.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const first = await relay(slow, steps[0]!.tx_id, await sign(account, steps[0]!, 0));
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ object: "relay_receipt", status: "broadcasting", simulated: false });
      // a re-signed copy (the wallet's next nonce) is refused without being sent
      const again = await relay(slow, steps[0]!.tx_id, await sign(account, steps[0]!, 1));
      expect(again.status).toBe(409);
      expect(again.body.error).toMatch(/step_in_flight|nonce_not_next/);
      expect(await pub.getTransactionCount({ address: account.address, blockTag: "pending" })).toBe(1);
      // no new action while the step is in flight
      expect((await api.post("/api/v1/deposits", { amount_usdc: 150 })).status).toBe(409);
      const status = await relayStatus(slow, steps[0]!.tx_id);
      expect(status.body).toMatchObject({ status: "broadcasting", tx_hash: first.body.tx_hash });
      await pub.request({ method: "evm_mine" as never, params: [] as never });
    } finally {
      await pub.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    // a read reconciles it with the chain
    const reconciled = await relayStatus(slow, steps[0]!.tx_id);
    expect(reconciled.body).toMatchObject({ status: "relayed", tx_hash: expect.stringMatching(/^0x/) });
    expect(reconciled.body.receipt).toMatchObject({ status: "confirmed", simulated: false });
    let nonce = 1;
    for (const step of steps.slice(1)) expect((await relay(slow, step.tx_id, await sign(account, step, nonce++))).status).toBe(200);
    expect(await slow.ctx.stores.fees.forTreasury(t.treasuryId)).toHaveLength(1);
    expect(await pub.getTransactionCount({ address: account.address })).toBe(3);
  });

  it("a step claimed by a process that died before sending is sent by the reconciliation, once", async () => {
    const { account, steps } = await walletWithDeposit(gw);
    const signed = await sign(account, steps[0]!, 0);
    const { keccak256 } = await import("viem");
    // the claim landed (state broadcasting, hash recorded), then the process died: nothing reached the node
    expect(
      await gw.ctx.stores.envelopes.claimStep(steps[0]!.tx_id, {
        txHash: keccak256(signed),
        signed,
        signer: account.address,
        nonce: 0,
        at: new Date().toISOString(),
      }),
    ).toBe(true);
    expect(await pub.getTransactionCount({ address: account.address, blockTag: "pending" })).toBe(0);
    // a later read sends the recorded bytes (same hash: it cannot execute twice), the next one records it
    await call(gw.url, "GET", `/api/v1/relay/${steps[0]!.tx_id}`);
    let status;
    for (let i = 0; i < 20; i++) {
      status = (await relayStatus(gw, steps[0]!.tx_id)).body;
      if (status.status === "relayed") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toMatchObject({ status: "relayed", tx_hash: keccak256(signed) });
    expect(await pub.getTransactionCount({ address: account.address })).toBe(1);
    // the same bytes again answer the step's receipt; another signature of it is refused with the recorded hash
    expect((await relay(gw, steps[0]!.tx_id, signed)).body).toMatchObject({ object: "relay_receipt", status: "confirmed", tx_hash: keccak256(signed) });
    expect((await relay(gw, steps[0]!.tx_id, await sign(account, steps[0]!, 1))).body).toMatchObject({ error: "already_relayed", tx_hash: keccak256(signed) });
  });

  it("a step mined and reverted returns to awaiting a signature, and the treasury is told relay.failed once", async () => {
    const { account, t, steps } = await walletWithDeposit(slow, 200);
    const token = AaveV3Base.ASSETS.USDC.UNDERLYING;
    const code = (await pub.getCode({ address: token })) as Hex;
    await pub.request({ method: "evm_setAutomine" as never, params: [false] as never });
    let hash: Hex;
    try {
      const sent = await relay(slow, steps[0]!.tx_id, await sign(account, steps[0]!, 0));
      expect(sent.status).toBe(202);
      hash = sent.body.tx_hash;
      // the token breaks before the block is mined (its code an INVALID opcode): the fee's transfer reverts on chain
      await pub.request({ method: "anvil_setCode" as never, params: [token, "0xfe"] as never });
      await pub.request({ method: "evm_mine" as never, params: [] as never });
    } finally {
      await pub.request({ method: "anvil_setCode" as never, params: [token, code] as never });
      await pub.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    expect((await pub.getTransactionReceipt({ hash: hash! })).status).toBe("reverted");
    // a read reconciles it: reverted, nothing recorded, the step waits for a new signature
    const status = await relayStatus(slow, steps[0]!.tx_id);
    expect(status.body.status).toBe("awaiting_signature");
    await relayStatus(slow, steps[0]!.tx_id); // read again: nothing more to tell
    const envelopeId = (await slow.ctx.stores.envelopes.step(steps[0]!.tx_id))!.envelopeTxId;
    const failed = (await slow.ctx.stores.events.after(t.treasuryId, 0, 50)).filter((e) => e.type === "relay.failed");
    expect(failed.map((e) => e.data)).toEqual([{ envelope_id: envelopeId, step: 0, tx_hash: hash!, reason: "reverted" }]);
  });
});
