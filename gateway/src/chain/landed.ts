/**
 * Did a signed transaction land? The automation's senders (the protection engine, the Safe executor) send
 * signed bytes (again: the node dedupes them) and wait for their receipt; they sign anew with the next nonce
 * only when the nonce went to another transaction.
 *
 * That conclusion needs care: a node can count the nonce as used at `latest` before it serves the receipt of
 * the transaction that used it (Anvil does, while it writes the block). Concluding "taken by another" at the
 * first such read sent a second deleverage after the first had landed (seen on the fork: the first sold and
 * repaid, the second reverted, and the engine recorded the trigger as failed). So the nonce counts as taken only
 * when the node, asked after a grace period, answers that it has no receipt and no such transaction; a read that
 * failed (a timeout, a 429, a node behind a load balancer that lags) proves nothing and starts the grace again.
 */
import { TransactionNotFoundError, TransactionReceiptNotFoundError, type Hex, type PublicClient, type TransactionReceipt } from "viem";

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
  client: Pick<PublicClient, "sendRawTransaction" | "getTransactionReceipt" | "getTransactionCount" | "getTransaction">,
  from: `0x${string}`,
  sent: SignedSend,
  opts: { timeoutMs: number; whileWaiting?: () => Promise<void> },
): Promise<TransactionReceipt | null> {
  await client.sendRawTransaction({ serializedTransaction: sent.raw }).catch(() => undefined);
  /** the receipt, "absent" only when the node says it has none (a timeout or a 429 says nothing) */
  const receiptOf = () =>
    client
      .getTransactionReceipt({ hash: sent.hash })
      .catch((err: unknown) => (err instanceof TransactionReceiptNotFoundError ? ("absent" as const) : ("unknown" as const)));
  /** the node does not know the transaction at all (mined or pending, it would) */
  const unknownToNode = () =>
    client.getTransaction({ hash: sent.hash }).then(
      () => false,
      (err: unknown) => err instanceof TransactionNotFoundError,
    );
  const deadline = Date.now() + opts.timeoutMs;
  let nonceUsedSince: number | null = null;
  for (;;) {
    const receipt = await receiptOf();
    if (typeof receipt === "object") return receipt;
    const used = receipt === "absent" ? await client.getTransactionCount({ address: from, blockTag: "latest" }).catch(() => null) : null;
    if (used !== null && used > sent.nonce) {
      nonceUsedSince ??= Date.now();
      if (Date.now() - nonceUsedSince >= NONCE_TAKEN_GRACE_MS) {
        const last = await receiptOf();
        if (typeof last === "object") return last;
        // taken by another only when the node says so twice over: no receipt, and no such transaction
        if (last === "absent" && (await unknownToNode())) return null;
      }
    } else if (receipt === "unknown") nonceUsedSince = null;
    if (Date.now() > deadline)
      throw new Error(`transaction ${sent.hash} not mined within ${opts.timeoutMs} ms; it is on the claim and will be settled on a later pass`);
    await opts.whileWaiting?.();
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}
