/**
 * The specification's wallet loop for a wallet that has proven nothing: a brand-new wallet registers a
 * wallet-mode treasury with `wallet_address` alone (no ownership proof), gets its 202 envelope for a deposit
 * although it holds nothing, signs with viem and relays, and the receipt is `confirmed` with the position on
 * the fork as the receipt says. The relayed transaction signed by the registered wallet is the proof of its key:
 * only then does the sandbox fund the wallet (on top of what it holds) and provide the other steps. The relay's
 * refusals (spec 4.8, 7) answer as the specification says, and none of them funds anything.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, createWalletClient, http, parseAbi, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey } from "../helpers/treasury";

const FEE_RECIPIENT = devAccount(6).address;
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const USDC = AaveV3Base.ASSETS.USDC.UNDERLYING as `0x${string}`;
const A_USDC = AaveV3Base.ASSETS.USDC.A_TOKEN as `0x${string}`;

let fork: BaseForkNode;
let gw: TestGateway;
let doc: ResponseValidator;

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT });
  doc = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balance = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20, functionName: "balanceOf", args: [who] });

async function spec(method: string, path: string, opts: Parameters<typeof call>[3] = {}) {
  const r = await call(gw.url, method, path, opts);
  doc.check(method, path, r.status, r.body);
  return r;
}

/** a registration with the specification's field alone, and its deposit's 202 envelope */
async function newWalletEnvelope(amount: number) {
  const account = privateKeyToAccount(generatePrivateKey());
  const reg = await spec("POST", "/api/v1/treasuries", { body: { wallet_address: account.address } });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  expect(reg.body).toMatchObject({ execution_mode: "wallet", ownership: "unproven" });
  const env = await spec("POST", "/api/v1/deposits", {
    body: { amount_usdc: amount },
    headers: { authorization: `Bearer ${reg.body.api_key}`, "idempotency-key": newIdempotencyKey() },
  });
  expect(env.status, JSON.stringify(env.body)).toBe(202);
  expect(env.body).toMatchObject({ sandbox: true, object: "unsigned_transaction", status: "awaiting_signature" });
  return { account, apiKey: reg.body.api_key as string, env: env.body };
}

/** signed with viem by `account`; the wallet holds no ETH, so nonce and gas are given (nothing to estimate against) */
async function sign(account: PrivateKeyAccount, tx: { to: Hex; data: Hex; value: string }, nonce: number) {
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
  return wallet.signTransaction(await wallet.prepareTransactionRequest({ to: tx.to, data: tx.data, value: BigInt(tx.value), nonce, gas: 500_000n }));
}

const relay = (body: unknown, key: string | null = newIdempotencyKey()) =>
  spec("POST", "/api/v1/relay", { body, headers: key === null ? {} : { "idempotency-key": key } });

describe("a wallet that has proven nothing gets the whole wallet loop in the sandbox", () => {
  it("prepares without touching the wallet, refuses what the specification refuses with nothing funded, then relays every step signed with viem", async () => {
    const { account, env } = await newWalletEnvelope(1000);
    const steps = env.steps as { tx_id: string; kind: string; unsigned_transaction: { to: Hex; data: Hex; value: string } }[];
    expect(steps.map((s) => s.kind)).toEqual(["fee_transfer", "approval", "pool_call"]);
    // the envelope touched nothing of the wallet's
    expect(await balance(USDC, account.address)).toBe(0n);
    expect(await pub().getBalance({ address: account.address })).toBe(0n);

    const first = steps[0]!;
    const good = await sign(account, first.unsigned_transaction, 0);
    expect((await relay({ tx_id: first.tx_id, signed_transaction: good }, null)).status, "no Idempotency-Key").toBe(400);
    expect((await relay({ tx_id: first.tx_id, signed_transaction: "0xnothex" })).status, "a body that is not hex").toBe(400);
    expect((await relay({ tx_id: "tx_0000000000000000000000", signed_transaction: good })).status, "an unknown tx_id").toBe(404);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const foreign = await relay({ tx_id: first.tx_id, signed_transaction: await sign(stranger, first.unsigned_transaction, 0) });
    expect([foreign.status, foreign.body.error], "a transaction signed by another key").toEqual([400, "signer_mismatch"]);
    const altered = { ...first.unsigned_transaction, data: (first.unsigned_transaction.data.slice(0, -2) + "ff") as Hex };
    const edited = await relay({ tx_id: first.tx_id, signed_transaction: await sign(account, altered, 0) });
    expect(edited.status, "altered calldata").toBe(400);
    // none of the refusals funded the wallet: only a checked signature of the envelope's own transaction does
    expect(await balance(USDC, account.address)).toBe(0n);
    expect(await pub().getBalance({ address: account.address })).toBe(0n);

    let last: Awaited<ReturnType<typeof relay>> | undefined;
    for (const [i, s] of steps.entries()) {
      last = await relay({ tx_id: s.tx_id, signed_transaction: i === 0 ? good : await sign(account, s.unsigned_transaction, i) });
      expect(last.status, JSON.stringify(last.body)).toBe(200);
    }
    expect(last!.body).toMatchObject({ object: "relay_receipt", status: "confirmed", simulated: false });
    // the position on the fork is the receipt's: 1,000 less the 2% deposit fee supplied to Aave, the fee paid
    const supplied = await balance(A_USDC, account.address);
    expect(supplied).toBeGreaterThanOrEqual(979_999_999n);
    expect(supplied).toBeLessThanOrEqual(980_000_001n);
    expect(await balance(USDC, account.address)).toBe(0n);

    // a second relay of a relayed step (other bytes) is refused; the same bytes again answer the same receipt
    const again = await relay({ tx_id: steps[2]!.tx_id, signed_transaction: await sign(account, steps[2]!.unsigned_transaction, 3) });
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(again.status).toBeLessThan(500);
  }, 120_000);

  it("relays the one unsigned_transaction alone: the wallet's signature of it proves the key, the sandbox provides the rest", async () => {
    const { account, env } = await newWalletEnvelope(500);
    const r = await relay({ tx_id: env.tx_id, signed_transaction: await sign(account, env.unsigned_transaction, 0) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ object: "relay_receipt", tx_id: env.tx_id, status: "confirmed", simulated: false });
    const supplied = await balance(A_USDC, account.address);
    expect(supplied).toBeGreaterThanOrEqual(489_999_999n);
    expect(supplied).toBeLessThanOrEqual(490_000_001n);
  }, 120_000);

  it("funds on top of what a wallet holds: a signed relay for an unproven registration spends nothing the wallet held", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    await fork.fund(account.address, 300_000_000n); // 300 USDC of its own
    const reg = await spec("POST", "/api/v1/treasuries", { body: { wallet_address: account.address } });
    const env = await spec("POST", "/api/v1/deposits", {
      body: { amount_usdc: 1000 },
      headers: { authorization: `Bearer ${reg.body.api_key}`, "idempotency-key": newIdempotencyKey() },
    });
    expect(env.status, JSON.stringify(env.body)).toBe(202);
    const nonce = await pub().getTransactionCount({ address: account.address });
    const r = await relay({ tx_id: env.body.tx_id, signed_transaction: await sign(account, env.body.unsigned_transaction, nonce) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await balance(USDC, account.address)).toBe(300_000_000n);
  }, 120_000);
});
