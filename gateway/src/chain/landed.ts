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
 * The receipt of `sent`, or null when its nonce went to another transaction. `sent` may be one signed
 * transaction, or the variants of one nonce (a transaction and its replacements at a higher fee, read again at
 * every poll so a replacement signed while waiting is seen): the receipt of whichever landed, null only when the
 * node knows none of them. Throws after `timeoutMs` without either (the caller keeps the bytes on its claim and
 * settles on a later pass). `whileWaiting` runs between polls (a claim's lease renewal, a replacement); it may
 * throw to give up.
 */
export async function landedReceipt(
  client: Pick<PublicClient, "sendRawTransaction" | "getTransactionReceipt" | "getTransactionCount" | "getTransaction">,
  from: `0x${string}`,
  sent: SignedSend | (() => readonly SignedSend[]),
  opts: { timeoutMs: number; whileWaiting?: () => Promise<void> },
): Promise<TransactionReceipt | null> {
  const variants = typeof sent === "function" ? sent : () => [sent];
  const nonce = variants()[0]!.nonce;
  // sent again in the order they were signed: the node keeps the one of the highest fee
  for (const v of variants()) await client.sendRawTransaction({ serializedTransaction: v.raw }).catch(() => undefined);
  /** a variant's receipt, "absent" only when the node says it has none of any (a timeout or a 429 says nothing) */
  const receiptOf = async (): Promise<TransactionReceipt | "absent" | "unknown"> => {
    let none: "absent" | "unknown" = "absent";
    for (const v of variants()) {
      const r = await client
        .getTransactionReceipt({ hash: v.hash })
        .catch((err: unknown) => (err instanceof TransactionReceiptNotFoundError ? ("absent" as const) : ("unknown" as const)));
      if (typeof r === "object") return r;
      if (r === "unknown") none = "unknown";
    }
    return none;
  };
  /** the node knows none of the variants at all (mined or pending, it would) */
  const unknownToNode = async () => {
    for (const v of variants()) {
      const unknown = await client.getTransaction({ hash: v.hash }).then(
        () => false,
        (err: unknown) => err instanceof TransactionNotFoundError,
      );
      if (!unknown) return false;
    }
    return true;
  };
  const deadline = Date.now() + opts.timeoutMs;
  let nonceUsedSince: number | null = null;
  for (;;) {
    const receipt = await receiptOf();
    if (typeof receipt === "object") return receipt;
    const used = receipt === "absent" ? await client.getTransactionCount({ address: from, blockTag: "latest" }).catch(() => null) : null;
    if (used !== null && used > nonce) {
      nonceUsedSince ??= Date.now();
      if (Date.now() - nonceUsedSince >= NONCE_TAKEN_GRACE_MS) {
        const last = await receiptOf();
        if (typeof last === "object") return last;
        // taken by another only when the node says so twice over: no receipt, and no such transaction
        if (last === "absent" && (await unknownToNode())) return null;
      }
    } else if (receipt === "unknown") nonceUsedSince = null;
    if (Date.now() > deadline)
      throw new Error(`transaction ${variants().at(-1)!.hash} not mined within ${opts.timeoutMs} ms; it is on the claim and will be settled on a later pass`);
    await opts.whileWaiting?.();
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}
