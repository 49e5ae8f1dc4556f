/**
 * The local facilitator settles concurrently (issue 11, item 5), on a chain
 * that mines a block every 2 s as Base does. One lane (the old queue) takes a
 * block per settlement: 8 payments took 8 blocks, about 16 s. Pipelined nonces
 * put them in the same one or two blocks. A facilitator restarted while its
 * settlements wait in the mempool continues after them, with no nonce clash.
 */
import { createPublicClient, createTestClient, http } from "viem";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { LocalFacilitator } from "../../gateway/src/x402/facilitator/local-facilitator";
import { challengeFor, FACILITATOR_KEY, newPayer, paymentHeader, startX402Stack, type X402Stack } from "../helpers/x402-stack";

let stack: X402Stack;
beforeAll(async () => {
  stack = await startX402Stack();
}, 60_000);
afterAll(() => stack?.close());

const decode = (header: string) => JSON.parse(Buffer.from(header, "base64").toString()) as PaymentPayload;

async function payments(n: number, requirements: PaymentRequirements) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const { account, wallet } = await newPayer(stack.chain);
      return { payer: account.address, payload: decode(await paymentHeader(wallet, requirements)) };
    }),
  );
}

describe("settlement is not a single lane", () => {
  it("8 concurrent settlements land in one or two blocks; a restarted facilitator continues after the mempool", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const first = await payments(4, requirements);
    const second = await payments(4, requirements);
    const pub = createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
    const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
    const before = await Promise.all([...first, ...second].map((p) => stack.chain.balanceOf(p.payer)));
    const payToBefore = await stack.chain.balanceOf(stack.payTo);
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    try {
      const started = Date.now();
      const running = first.map((p) => stack.facilitator.facilitator.settle(p.payload, requirements));
      // the four are in the mempool, not mined: the facilitator process dies and another one starts
      const settler = (await import("viem/accounts")).privateKeyToAccount(FACILITATOR_KEY).address;
      const mined = await pub.getTransactionCount({ address: settler, blockTag: "latest" });
      for (const deadline = Date.now() + 5_000; (await pub.getTransactionCount({ address: settler, blockTag: "pending" })) < mined + 4;) {
        if (Date.now() > deadline) throw new Error("the settlements never reached the mempool");
        await new Promise((r) => setTimeout(r, 20));
      }
      const restarted = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
      running.push(...second.map((p) => restarted.settle(p.payload, requirements)));
      const results = await Promise.all(running);
      const elapsed = Date.now() - started;

      for (const r of results) expect(r.success, r.errorReason).toBe(true);
      expect(new Set(results.map((r) => r.transaction)).size).toBe(8);
      const blocks = new Set(
        (await Promise.all(results.map((r) => pub.getTransactionReceipt({ hash: r.transaction as `0x${string}` })))).map((r) => r.blockNumber),
      );
      expect(blocks.size).toBeLessThanOrEqual(3);
      // one lane needed a block (2 s) per settlement: 16 s for these 8
      expect(elapsed).toBeLessThan(8_000);
    } finally {
      await test.setAutomine(true);
    }
    // each payer charged exactly once, the seller paid eight times
    const price = BigInt(requirements.maxAmountRequired);
    const after = await Promise.all([...first, ...second].map((p) => stack.chain.balanceOf(p.payer)));
    after.forEach((a, i) => expect(a).toBe(before[i]! - price));
    expect(await stack.chain.balanceOf(stack.payTo)).toBe(payToBefore + 8n * price);
  }, 60_000);

  it("a settlement that fails after the others took their nonces leaves no gap: every other one lands", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const price = BigInt(requirements.maxAmountRequired);
    // a payer who can pay once, with two proofs: both verify, the second one's transaction cannot be sent
    const poor = await newPayer(stack.chain, price);
    const twice = [decode(await paymentHeader(poor.wallet, requirements)), decode(await paymentHeader(poor.wallet, requirements))];
    const others = await payments(6, requirements);
    const facilitator = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
    const started = Date.now();
    // with viem's nonce manager the failed one's nonce stayed taken: the settlements after it waited in the
    // mempool behind the gap until the receipt wait gave up (180 s)
    const results = await Promise.all(
      [twice[0]!, ...others.slice(0, 3).map((p) => p.payload), twice[1]!, ...others.slice(3).map((p) => p.payload)].map((p) =>
        facilitator.settle(p, requirements),
      ),
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    const poorResults = [results[0]!, results[4]!];
    expect(poorResults.filter((r) => r.success)).toHaveLength(1);
    for (const r of [...results.slice(1, 4), ...results.slice(5)]) expect(r.success, r.errorReason).toBe(true);
    expect(await stack.chain.balanceOf(poor.account.address)).toBe(0n);
  }, 60_000);

  it("a nonce counted by one facilitator and taken by another with the same key is read again: the settlement lands once", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const [a1, b1, a2] = await payments(3, requirements);
    const a = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
    const b = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
    expect((await a.settle(a1!.payload, requirements)).success).toBe(true); // a counts the next nonce
    expect((await b.settle(b1!.payload, requirements)).success).toBe(true); // b takes it
    const before = await stack.chain.balanceOf(a2!.payer);
    const settled = await a.settle(a2!.payload, requirements);
    expect(settled.success, settled.errorReason).toBe(true);
    expect(await stack.chain.balanceOf(a2!.payer)).toBe(before - BigInt(requirements.maxAmountRequired));
    // and a keeps counting from there
    const [a3] = await payments(1, requirements);
    expect((await a.settle(a3!.payload, requirements)).success).toBe(true);
  }, 60_000);

  it("an authorization already used on chain is answered with the transaction that used it, never sent again", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const [p] = await payments(1, requirements);
    const first = await new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY }).settle(p!.payload, requirements);
    expect(first.success, first.errorReason).toBe(true);
    const before = await stack.chain.balanceOf(p!.payer);
    // another process (a restarted facilitator) asked to settle it again: nothing joins it in flight
    const again = await new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY }).settle(p!.payload, requirements);
    expect(again).toMatchObject({ success: true, transaction: first.transaction });
    expect(await stack.chain.balanceOf(p!.payer)).toBe(before);
  }, 60_000);
});

describe("a settle right after its verify", () => {
  const settlerNonce = async () =>
    createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) }).getTransactionCount({
      address: (await import("viem/accounts")).privateKeyToAccount(FACILITATOR_KEY).address,
      blockTag: "pending",
    });
  /** the facilitator's full verifications while `run` runs */
  async function verifications<T>(run: () => Promise<T>): Promise<{ result: T; count: number }> {
    const spy = vi.spyOn(LocalFacilitator.prototype as unknown as { verifyV1: (...args: unknown[]) => Promise<unknown> }, "verifyV1");
    try {
      const result = await run();
      return { result, count: spy.mock.calls.length };
    } finally {
      spy.mockRestore();
    }
  }

  it("is not verified again when the transfer's estimate succeeds: one verification for verify and settle, the payer charged once", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const [p] = await payments(1, requirements);
    const facilitator = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
    const before = await stack.chain.balanceOf(p!.payer);
    const { result, count } = await verifications(async () => {
      expect((await facilitator.verify(p!.payload, requirements)).isValid).toBe(true);
      return facilitator.settle(p!.payload, requirements);
    });
    expect(result.success, result.errorReason).toBe(true);
    expect(count).toBe(1);
    expect(await stack.chain.balanceOf(p!.payer)).toBe(before - BigInt(requirements.maxAmountRequired));
    // settled: the same payment again is verified in full (the verification is used once) and answered with its transaction
    const again = await verifications(() => facilitator.settle(p!.payload, requirements));
    expect(again.count).toBe(1);
    expect(again.result).toMatchObject({ success: true, transaction: result.transaction });
    expect(await stack.chain.balanceOf(p!.payer)).toBe(before - BigInt(requirements.maxAmountRequired));
  }, 60_000);

  it("funds spent between verify and settle: the full verification's reason is the answer and nothing is sent", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const price = BigInt(requirements.maxAmountRequired);
    const poor = await newPayer(stack.chain, price);
    const [a, b] = [decode(await paymentHeader(poor.wallet, requirements)), decode(await paymentHeader(poor.wallet, requirements))];
    const facilitator = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY });
    expect((await facilitator.verify(a!, requirements)).isValid).toBe(true);
    // the payer's one price is spent by another proof before the first one settles
    expect((await facilitator.settle(b!, requirements)).success).toBe(true);
    const nonce = await settlerNonce();
    const { result, count } = await verifications(() => facilitator.settle(a!, requirements));
    expect(count).toBe(1);
    expect(result).toMatchObject({ success: false, errorReason: "insufficient_funds", transaction: "" });
    expect(await settlerNonce()).toBe(nonce);
    expect(await stack.chain.balanceOf(poor.account.address)).toBe(0n);
  }, 60_000);

  it("other requirements than those verified, or a verification older than the window, are verified in full", async () => {
    const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const [p, q] = await payments(2, requirements);
    const facilitator = new LocalFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: FACILITATOR_KEY, verifiedReuseMs: 200 });
    expect((await facilitator.verify(p!.payload, requirements)).isValid).toBe(true);
    const dearer = { ...requirements, maxAmountRequired: String(BigInt(requirements.maxAmountRequired) + 1n) };
    const refused = await verifications(() => facilitator.settle(p!.payload, dearer));
    expect(refused.count).toBe(1);
    expect(refused.result.success).toBe(false);
    expect((await facilitator.verify(q!.payload, requirements)).isValid).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    const late = await verifications(() => facilitator.settle(q!.payload, requirements));
    expect(late.count).toBe(1);
    expect(late.result.success, late.result.errorReason).toBe(true);
  }, 60_000);
});
