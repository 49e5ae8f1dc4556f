/**
 * landedReceipt's one rule: a used nonce means "taken by another transaction" only when, after the grace period,
 * the node answers that it has neither the receipt nor the transaction. The node here is scripted (the window in
 * which Anvil counts a nonce before it serves the receipt is a race a real node shows rarely: 1 run in 8 of the
 * slide scenario under load).
 */
import { describe, expect, it } from "vitest";
import { TransactionNotFoundError, TransactionReceiptNotFoundError, type TransactionReceipt } from "viem";
import { landedReceipt, NONCE_TAKEN_GRACE_MS } from "./landed";

const sent = { hash: `0x${"ab".repeat(32)}` as const, raw: "0x02" as const, nonce: 7 };
const from = `0x${"11".repeat(20)}` as const;
const receipt = { status: "success", transactionHash: sent.hash } as unknown as TransactionReceipt;

/**
 * A node that counts the nonce as used at once and serves the receipt `receiptAfterMs` later (never: null);
 * `failing` answers every receipt read before then with a timeout instead of "not found".
 */
function node(receiptAfterMs: number | null, failing = false) {
  const t0 = Date.now();
  let sends = 0;
  const mined = () => receiptAfterMs !== null && Date.now() - t0 >= receiptAfterMs;
  return {
    sends: () => sends,
    client: {
      sendRawTransaction: async () => (sends++, sent.hash),
      getTransactionReceipt: async () => {
        if (mined()) return receipt;
        throw failing ? new Error("request timed out") : new TransactionReceiptNotFoundError({ hash: sent.hash });
      },
      getTransaction: async () => {
        if (mined()) return {};
        throw new TransactionNotFoundError({ hash: sent.hash });
      },
      getTransactionCount: async () => 8,
    },
  };
}

describe("landedReceipt", () => {
  it("waits for the receipt of a transaction whose nonce is counted before its receipt is served", async () => {
    const n = node(600);
    expect(await landedReceipt(n.client as never, from, sent, { timeoutMs: 10_000 })).toBe(receipt);
    expect(n.sends()).toBe(1);
  });

  it("a receipt read that fails (a timeout, a 429) proves nothing: it waits past the grace for the receipt", async () => {
    const n = node(NONCE_TAKEN_GRACE_MS + 800, true);
    expect(await landedReceipt(n.client as never, from, sent, { timeoutMs: 10_000 })).toBe(receipt);
  });

  it("says the nonce went elsewhere (null) only after the grace period, the node knowing neither receipt nor transaction", async () => {
    const t = Date.now();
    expect(await landedReceipt(node(null).client as never, from, sent, { timeoutMs: 10_000 })).toBeNull();
    expect(Date.now() - t).toBeGreaterThanOrEqual(NONCE_TAKEN_GRACE_MS);
  });

  it("gives up at the timeout when the nonce is unused and no receipt comes, and lets the caller stop it", async () => {
    const pending = { ...node(null).client, getTransactionCount: async () => 7 };
    await expect(landedReceipt(pending as never, from, sent, { timeoutMs: 300 })).rejects.toThrow(/not mined within 300 ms/);
    await expect(
      landedReceipt(pending as never, from, sent, {
        timeoutMs: 10_000,
        whileWaiting: async () => {
          throw new Error("lost the claim");
        },
      }),
    ).rejects.toThrow("lost the claim");
  });

  it("waits for any variant of the nonce, one signed while waiting included (a replacement at a higher fee)", async () => {
    const first = sent;
    const replacement = { hash: `0x${"cd".repeat(32)}` as const, raw: "0x03" as const, nonce: 7 };
    const variants: { hash: `0x${string}`; raw: `0x${string}`; nonce: number }[] = [first];
    const minedReceipt = { status: "success", transactionHash: replacement.hash } as unknown as TransactionReceipt;
    let sends = 0;
    const client = {
      sendRawTransaction: async () => (sends++, first.hash),
      getTransactionReceipt: async ({ hash }: { hash: string }) => {
        if (hash === replacement.hash) return minedReceipt;
        throw new TransactionReceiptNotFoundError({ hash: hash as never });
      },
      getTransaction: async () => ({}),
      getTransactionCount: async () => 7,
    };
    let waits = 0;
    const got = await landedReceipt(client as never, from, () => variants, {
      timeoutMs: 10_000,
      whileWaiting: async () => {
        if (++waits === 3) variants.push(replacement);
      },
    });
    expect(got).toBe(minedReceipt);
    expect(sends).toBe(1); // the caller sends the replacement it signs; the wait sent what was there at its start
    expect(waits).toBe(3);
  });
});
