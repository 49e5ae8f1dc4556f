/**
 * Did a signed transaction land? The automation's senders (the protection engine, the Safe executor) send
 * signed bytes (again: the node dedupes them) and wait for their receipt; they sign anew with the next nonce
 * only when the nonce went to another transaction.
 *
 * That conclusion needs care: a node can count the nonce as used at `latest` before it serves the receipt of
 * the transaction that used it (Anvil does, while it writes the block). Concluding "taken by another" at the
 * first such read sent a second deleverage after the first had landed (seen on the fork: the first sold and
 * repaid, the second reverted, and the engine recorded the trigger as failed). So the nonce counts as taken only
 * when the receipt is still absent after a grace period.
 */
import type { Hex, PublicClient, TransactionReceipt } from "viem";

/** how long a used nonce's receipt is waited for before the nonce counts as taken by another transaction */
export const NONCE_TAKEN_GRACE_MS = 2_000;
const POLL_MS = 100;

export interface SignedSend {
  hash: Hex;
  raw: Hex;
  nonce: number;
}

/**
 * The receipt of `sent`, or null when its nonce went to another transaction. Throws after `timeoutMs` without
 * either (the caller keeps the bytes on its claim and settles on a later pass). `whileWaiting` runs between
 * polls (a claim's lease renewal); it may throw to give up.
 */
export async function landedReceipt(
  client: Pick<PublicClient, "sendRawTransaction" | "getTransactionReceipt" | "getTransactionCount">,
  from: `0x${string}`,
  sent: SignedSend,
  opts: { timeoutMs: number; whileWaiting?: () => Promise<void> },
): Promise<TransactionReceipt | null> {
  await client.sendRawTransaction({ serializedTransaction: sent.raw }).catch(() => undefined);
  const receiptOf = () => client.getTransactionReceipt({ hash: sent.hash }).catch(() => null);
  const deadline = Date.now() + opts.timeoutMs;
  let nonceUsedSince: number | null = null;
  for (;;) {
    const receipt = await receiptOf();
    if (receipt) return receipt;
    const used = await client.getTransactionCount({ address: from, blockTag: "latest" });
    if (used > sent.nonce) {
      nonceUsedSince ??= Date.now();
      if (Date.now() - nonceUsedSince >= NONCE_TAKEN_GRACE_MS) return (await receiptOf()) ?? null;
    }
    if (Date.now() > deadline) throw new Error(`transaction ${sent.hash} not mined within ${opts.timeoutMs} ms; it is on the claim and will be settled on a later pass`);
    await opts.whileWaiting?.();
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}
