import { Wallet } from "ethers";
import { keccak256, serializeTransaction, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/src/lib/clock";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { countWriteTransactions } from "../helpers/store";
import { authed, newIdempotencyKey, registerTreasury } from "../helpers/treasury";

let gw: TestGateway;
let v: ResponseValidator;
const clock = new ManualClock(new Date());

beforeAll(async () => {
  gw = await startTestGateway({}, { clock });
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
});
afterAll(() => gw.close());

interface Step {
  tx_id: string;
  seq: number;
  kind: string;
  unsigned_transaction: { chain_id: number; to: Hex; data: Hex; value: string };
}

const relay = async (txId: string, signed: string, key = newIdempotencyKey()) => {
  const r = await call(gw.url, "POST", "/api/v1/relay", { body: { tx_id: txId, signed_transaction: signed }, headers: { "idempotency-key": key } });
  v.check("POST", "/api/v1/relay", r.status, r.body);
  return r;
};

/** EIP-1559 signature with viem */
const signViem = (account: PrivateKeyAccount, step: Step, nonce: number, over: Partial<{ to: Hex; data: Hex; value: bigint; chainId: number }> = {}) =>
  account.signTransaction({
    type: "eip1559",
    chainId: over.chainId ?? step.unsigned_transaction.chain_id,
    nonce,
    to: over.to ?? step.unsigned_transaction.to,
    data: over.data ?? step.unsigned_transaction.data,
    value: over.value ?? BigInt(step.unsigned_transaction.value),
    gas: 300_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  });

async function walletTreasury(chain: "base" | "arbitrum" = "base") {
  const pk = generatePrivateKey();
  const account = privateKeyToAccount(pk);
  const t = await registerTreasury(gw.url, { wallet_address: account.address, chain });
  // seed the simulated ledger with collateral, idle USDC and debt
  await gw.ctx.stores.treasuries.updateHoldings(
    t.treasuryId,
    { btcUnits: 50_000_000n, ethUnits: 10n ** 19n, usdcMicro: 5_000_000_000n, debtMicro: 24_000_000_000n },
    clock.now().toISOString(),
  );
  return { pk, account, t, api: authed(gw.url, t.key) };
}

describe("relay of a viem-signed EIP-1559 envelope", () => {
  it("accepts each step in order, hashes the signed bytes, and executes the action once at the last step", async () => {
    const { account, t, api } = await walletTreasury();
    const env = (await api.post("/api/v1/deposits", { amount_usdc: 1000 })).body;
    const steps: Step[] = env.steps;
    expect(steps).toHaveLength(3);

    // out of order: the pool call before the approval
    const early = await relay(steps[2]!.tx_id, await signViem(account, steps[2]!, 2));
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ error: "step_out_of_order", next_tx_id: steps[0]!.tx_id });

    const receipts = [];
    for (const step of steps) {
      const signed = await signViem(account, step, step.seq);
      const r = await relay(step.tx_id, signed);
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ sandbox: true, object: "relay_receipt", tx_id: step.tx_id, simulated: true, chain: "base", status: "confirmed" });
      expect(r.body.tx_hash).toBe(keccak256(signed));
      receipts.push(r.body);
    }
    expect(receipts.map((r) => r.result.sequence_complete)).toEqual([false, false, true]);
    const final = receipts[2];
    expect(final.result).toMatchObject({ action: "deposit", amount_usdc: 1000 });
    expect(final.result.resulting_ltv).toBeLessThan(40);
    expect(final.result.receipt.deposit_id).toMatch(/^dep_/);

    const state = (await api.get("/api/v1/treasury")).body;
    expect(state.pending_tx_id).toBeNull();
    expect(state.ltv).toBe(final.result.resulting_ltv);
    const audit = (await api.get("/api/v1/audit")).body.data;
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: "deposit", fee_usdc: 20, trigger: "relayed_signature" });

    // the same signed transaction again, with a fresh key (a client retrying after a lost answer): its receipt
    const same = await relay(steps[2]!.tx_id, await signViem(account, steps[2]!, 2));
    expect([same.status, same.body.tx_hash]).toEqual([200, final.tx_hash]);
    // another signature of a relayed step: 409 with the first hash; nothing runs twice
    const again = await relay(steps[2]!.tx_id, await signViem(account, steps[2]!, 3));
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: "already_relayed", tx_hash: final.tx_hash });
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(1);
    // a new action is possible once the envelope is done
    expect((await api.post("/api/v1/repay", { amount_usdc: 10 })).status).toBe(202);
    expect(t.treasuryId).toBe(env.treasury_id);
  });

  it("replays the stored receipt for the same Idempotency-Key and body", async () => {
    const { account, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 100 })).body;
    const step: Step = env.steps[0];
    const signed = await signViem(account, step, 0);
    const key = newIdempotencyKey();
    const first = await relay(step.tx_id, signed, key);
    const second = await relay(step.tx_id, signed, key);
    expect(second.text).toBe(first.text);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    // the same key with another transaction of the same signer is a different request
    const other = await relay(step.tx_id, await signViem(account, step, 1), key);
    expect(other.status).toBe(422);
  });

  it("a simulated treasury's relay is one write transaction with its Idempotency-Key (nothing leaves the store)", async () => {
    const { account, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 100 })).body;
    const step: Step = env.steps[0];
    const signed = await signViem(account, step, 0);
    let r: Awaited<ReturnType<typeof relay>> | undefined;
    // was three: the key's claim, the step, the key's completion
    expect(await countWriteTransactions(gw.ctx.db, async () => void (r = await relay(step.tx_id, signed)))).toBe(1);
    expect(r!.status).toBe(200);
    expect(r!.body).toMatchObject({ object: "relay_receipt", tx_id: step.tx_id, simulated: true, status: "confirmed" });
  });
});

describe("the one-signature path on a simulated treasury", () => {
  it("relaying the envelope's unsigned_transaction under its tx_id executes the action once, the other steps provided in simulation", async () => {
    const { account, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 1000 })).body;
    const main = { tx_id: env.tx_id, seq: 0, kind: "pool_call", unsigned_transaction: env.unsigned_transaction } as Step;
    // signed for another call than the envelope's: refused, nothing provided
    const wrong = await relay(env.tx_id, await signViem(account, main, 0, { data: env.steps[1].unsigned_transaction.data }));
    expect(wrong.status).toBe(400);
    expect((await call(gw.url, "GET", `/api/v1/relay/${env.steps[1].tx_id}`)).body.status).toBe("awaiting_signature");
    const signed = await signViem(account, main, 0);
    const r = await relay(env.tx_id, signed);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      object: "relay_receipt",
      tx_id: env.tx_id,
      simulated: true,
      status: "confirmed",
      result: { action: "borrow", sequence_complete: true, remaining_steps: 0 },
    });
    expect(r.body.provided_steps).toEqual([expect.objectContaining({ provided_by: "sandbox", method: "simulation", kind: "fee_transfer" })]);
    expect(r.body.result.receipt).toMatchObject({ action: "borrow", fee_usdc: 20 });
    // the same bytes again: the same receipt; the steps path afterwards: already relayed
    const again = await relay(env.tx_id, signed);
    expect([again.status, again.body.tx_hash]).toEqual([200, r.body.tx_hash]);
    expect((await relay(env.steps[1].tx_id, await signViem(account, env.steps[1], 1))).body.error).toBe("already_relayed");
    expect((await call(gw.url, "GET", `/api/v1/relay/${env.tx_id}`)).body).toMatchObject({ status: "relayed", envelope_status: "relayed" });
  });
});

describe("ethers-signed legacy and EIP-2930 transactions", () => {
  it("are accepted when they match", async () => {
    const { pk, api } = await walletTreasury("arbitrum");
    const wallet = new Wallet(pk);
    const env = (await api.post("/api/v1/repay", { amount_usdc: 100 })).body;
    const [approve, repay]: Step[] = env.steps;
    const legacy = await wallet.signTransaction({
      type: 0,
      chainId: approve!.unsigned_transaction.chain_id,
      nonce: 0,
      to: approve!.unsigned_transaction.to,
      data: approve!.unsigned_transaction.data,
      value: 0n,
      gasLimit: 100_000n,
      gasPrice: 1_000_000_000n,
    });
    const r1 = await relay(approve!.tx_id, legacy);
    expect(r1.status, r1.text).toBe(200);
    expect(r1.body.tx_hash).toBe(keccak256(legacy as Hex));
    const eip2930 = await wallet.signTransaction({
      type: 1,
      chainId: repay!.unsigned_transaction.chain_id,
      nonce: 1,
      to: repay!.unsigned_transaction.to,
      data: repay!.unsigned_transaction.data,
      value: 0n,
      gasLimit: 300_000n,
      gasPrice: 1_000_000_000n,
      accessList: [],
    });
    const r2 = await relay(repay!.tx_id, eip2930);
    expect(r2.status, r2.text).toBe(200);
    expect(r2.body.result).toMatchObject({ action: "repay", sequence_complete: true });
    expect((await api.get("/api/v1/treasury")).body.debt_usdc).toBe(23900);
  });
});

describe("a signed transaction that is not what the envelope asked for", () => {
  it("gets a 400 with its own code for each mismatch, and changes nothing", async () => {
    const { account, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 100 })).body;
    const step: Step = env.steps[0];
    const stranger = privateKeyToAccount(generatePrivateKey());
    const cases: [string, Promise<string> | string][] = [
      ["signer_mismatch", signViem(stranger, step, 0)],
      ["to_mismatch", signViem(account, step, 0, { to: "0x000000000000000000000000000000000000dEaD" })],
      ["data_mismatch", signViem(account, step, 0, { data: `${step.unsigned_transaction.data}00` as Hex })],
      ["value_mismatch", signViem(account, step, 0, { value: 1n })],
      ["chain_id_mismatch", signViem(account, step, 0, { chainId: 1 })],
      ["invalid_signed_transaction", "0xdeadbeef"],
      [
        "invalid_signed_transaction",
        serializeTransaction({
          type: "eip1559",
          chainId: 8453,
          nonce: 0,
          to: step.unsigned_transaction.to,
          data: step.unsigned_transaction.data,
          maxFeePerGas: 1n,
          maxPriorityFeePerGas: 1n,
          gas: 1n,
        }),
      ],
    ];
    for (const [code, signed] of cases) {
      const r = await relay(step.tx_id, await signed);
      expect(r.status, code).toBe(400);
      expect(r.body.error).toBe(code);
    }
    // a pre-EIP-155 legacy signature carries no chain id
    const unprotected = await account.signTransaction({
      type: "legacy",
      nonce: 0,
      to: step.unsigned_transaction.to,
      data: step.unsigned_transaction.data,
      value: 0n,
      gas: 300_000n,
      gasPrice: 1_000_000_000n,
    });
    const pre155 = await relay(step.tx_id, unprotected);
    expect(pre155.status).toBe(400);
    expect(pre155.body.error).toBe("chain_id_mismatch");
    expect((await api.get("/api/v1/treasury")).body.pending_tx_id).toBe(env.tx_id);
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);
    const ok = await relay(step.tx_id, await signViem(account, step, 0));
    expect(ok.status).toBe(200);
  });

  it("rejects a malformed body with 400", async () => {
    for (const body of [{}, { tx_id: "nope", signed_transaction: "0x00" }, { tx_id: "tx_1", signed_transaction: "zz" }]) {
      const r = await call(gw.url, "POST", "/api/v1/relay", { body, headers: { "idempotency-key": newIdempotencyKey() } });
      expect(r.status).toBe(400);
    }
    const noKey = await call(gw.url, "POST", "/api/v1/relay", { body: { tx_id: "tx_1", signed_transaction: "0x00" } });
    expect(noKey.status).toBe(400);
  });
});

describe("unknown and expired envelopes", () => {
  it("404 for an unknown tx_id", async () => {
    const r = await relay(`tx_${"0".repeat(32)}`, "0x00");
    expect(r.status).toBe(404);
    expect(r.body.error).toBe("envelope_not_found");
  });

  it("410 after 15 minutes; the treasury is free for a new action then", async () => {
    const { account, api } = await walletTreasury();
    const env = (await api.post("/api/v1/borrow", { amount_usdc: 100 })).body;
    const step: Step = env.steps[0];
    expect((await api.post("/api/v1/borrow", { amount_usdc: 100 })).status).toBe(409);
    clock.advance(15 * 60 * 1000);
    const r = await relay(step.tx_id, await signViem(account, step, 0));
    expect(r.status).toBe(410);
    expect(r.body).toMatchObject({ error: "envelope_expired", expired_at: env.expires_at });
    expect((await api.get("/api/v1/audit")).body.data).toHaveLength(0);
    expect((await api.post("/api/v1/borrow", { amount_usdc: 100 })).status).toBe(202);
  });
});
