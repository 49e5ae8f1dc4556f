/**
 * The transactions of a trigger's claim. Each is signed at a nonce the store gives out
 * (store/automation-nonce-store.ts) and written on the claim (hash and raw bytes) in one store transaction, then
 * sent; nothing waits for the chain on the way (`sendCall`). An engine that takes over a dead engine's claim
 * sends the same bytes again (at most once on chain) and reads their receipts.
 *
 * Waiting (`awaitLanded`) is apart: it waits for the receipt of any transaction on the claim at that nonce (the
 * first and its replacements), renewing the claim's lease and the engine's heartbeat; a lost claim stops it
 * (LostClaim). A transaction still pending REPLACE_AFTER_BLOCKS blocks after it was sent is signed again at its
 * nonce with both fees raised (chain/replacement-fees.ts), written on the claim first, then sent: one nonce, so
 * one of them at most lands. Only when the nonce went to another transaction (chain/landed.ts's careful rule)
 * is the call signed again at a new nonce (`landCall`).
 */
import { encodeFunctionData, keccak256, parseTransaction, type PublicClient, type TransactionReceipt } from "viem";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { landedReceipt } from "../chain/landed";
import { replacementFees } from "../chain/replacement-fees";
import type { SentTransaction } from "../store/protection-claim-store";
import { LostClaim } from "./lost-claim";
import { moduleCall, type Call } from "./module-calls";
import type { Plan } from "./repayment-plan";
import type { EngineParts, Run } from "./trigger-run";

/** how long one wait lasts before it leaves the transaction on the claim for a later pass */
const RECEIPT_TIMEOUT_MS = 60_000;
/** how many blocks a transaction may stay pending before it is replaced with higher fees */
export const REPLACE_AFTER_BLOCKS = BigInt(process.env.REPLACE_AFTER_BLOCKS ?? 2);
/** how often a wait reads the block number (for the replacement) */
const BLOCK_CHECK_MS = 250;

/**
 * Sign one call at the store's next nonce for the automation key and write it on the claim, in one store
 * transaction (signing is local; no chain call inside), then broadcast it. Returns at once: the receipt is
 * `awaitLanded`'s.
 */
export async function sendCall({ ctx, chain, automation }: EngineParts, run: Run, call: Call, fees: Plan["fees"]): Promise<SentTransaction> {
  const client = chain.client(run.t.chain);
  // the node's count is a floor (a transaction the key sent outside the store); the store gives out the rest
  const [pending, block] = await Promise.all([
    client.getTransactionCount({ address: automation.address, blockTag: "pending" }),
    client.getBlockNumber({ cacheTime: 0 }),
  ]);
  const now = ctx.clock.now();
  const sent = await ctx.tx.transaction(async () => {
    const nonce = await ctx.stores.automationNonces.allocate(run.t.chain, automation.address, pending, now);
    const raw = await automation.signTransaction({
      type: "eip1559",
      chainId: AAVE_MARKETS[run.t.chain].chainId,
      nonce,
      to: run.d.module,
      value: 0n,
      gas: call.gas,
      ...fees,
      data: encodeFunctionData(moduleCall(call)),
    });
    const s: SentTransaction = { hash: keccak256(raw), raw, nonce, call: call.kind };
    // a copy: PostgreSQL may run this again on a serialization failure; the run's claim changes once it committed
    if (!(await ctx.stores.protectionClaims.record({ ...run.claim, sent: [...run.claim.sent, s] }, now))) throw new LostClaim("this trigger", "engine");
    return s;
  });
  run.claim.sent.push(sent);
  run.sentAt.set(sent.hash, block);
  await client.sendRawTransaction({ serializedTransaction: sent.raw }).catch(() => undefined);
  return sent;
}

/**
 * Send the call and wait for it to land; signed again at a new nonce when its nonce went to another
 * transaction, a bounded number of times.
 */
export async function landCall(parts: EngineParts, run: Run, call: Call, fees: Plan["fees"]): Promise<TransactionReceipt> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const receipt = await awaitLanded(parts, run, await sendCall(parts, run, call, fees));
    if (receipt) return receipt;
  }
  throw new Error("the automation key's nonce was taken three times in a row");
}

/**
 * Send the signed bytes of `sent`'s nonce again (each variant on the claim) and wait for the receipt of whichever
 * lands (chain/landed.ts), replacing a transaction that stays pending; null when the nonce went to another
 * transaction.
 */
export async function awaitLanded(parts: EngineParts, run: Run, sent: SentTransaction): Promise<TransactionReceipt | null> {
  const { ctx, chain, automation } = parts;
  const variants = () => run.claim.sent.filter((s) => s.nonce === sent.nonce);
  const known = variants().find((v) => run.receipts.has(v.hash));
  if (known) return run.receipts.get(known.hash)!;
  const client = chain.client(run.t.chain);
  let renewed = Date.now();
  let checked = Date.now();
  // blocks count from the one the transaction was signed at, not from the start of this wait: blocks mined in
  // between would delay the replacement, and its fees would follow a later, lower base fee. A transaction
  // recovered from another engine's claim counts from now.
  let since = run.sentAt.get(sent.hash) ?? (await client.getBlockNumber({ cacheTime: 0 }));
  const receipt = await landedReceipt(client, automation.address, variants, {
    timeoutMs: RECEIPT_TIMEOUT_MS,
    whileWaiting: async () => {
      if (Date.now() - checked >= BLOCK_CHECK_MS) {
        checked = Date.now();
        const block = await client.getBlockNumber({ cacheTime: 0 });
        if (block >= since + REPLACE_AFTER_BLOCKS) {
          await replace(parts, run, client, variants().at(-1)!);
          since = block;
        }
      }
      if (Date.now() - renewed <= 1_000) return;
      if (!(await ctx.stores.protectionClaims.renew(run.claim.treasuryId, run.claim.holder, ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
      // a pass that waits on a transaction is still a pass: the engine stays on record as watching
      await ctx.stores.instances.beatEngine(run.claim.holder, automation.address, ctx.clock.now());
      renewed = Date.now();
    },
  });
  if (receipt) {
    run.receipts.set(receipt.transactionHash, receipt);
    run.gasWei += receipt.gasUsed * receipt.effectiveGasPrice;
  }
  return receipt;
}

/**
 * A transaction still pending: the same transaction at its nonce with both fees raised, written on the claim
 * (fenced by its holder), then sent. Nothing when its nonce is already used (a variant is mined), nor when it
 * waits behind a lower nonce of the key (a higher fee would not move it: that nonce's own waiter replaces it).
 */
async function replace({ ctx, automation }: EngineParts, run: Run, client: PublicClient, last: SentTransaction): Promise<void> {
  if ((await client.getTransactionCount({ address: automation.address, blockTag: "latest" })) !== last.nonce) return;
  const { r: _r, s: _s, v: _v, yParity: _y, ...tx } = parseTransaction(last.raw);
  if (tx.type !== "eip1559") return;
  const block = await client.getBlock({ blockTag: "latest" });
  const fees = replacementFees({ maxFeePerGas: tx.maxFeePerGas ?? 0n, maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n }, block.baseFeePerGas ?? 0n);
  const raw = await automation.signTransaction({ ...tx, ...fees });
  const replacement: SentTransaction = { hash: keccak256(raw), raw, nonce: last.nonce, call: last.call };
  const now = ctx.clock.now();
  if (!(await ctx.stores.protectionClaims.record({ ...run.claim, sent: [...run.claim.sent, replacement] }, now))) throw new LostClaim("this trigger", "engine");
  run.claim.sent.push(replacement);
  await client.sendRawTransaction({ serializedTransaction: raw }).catch(() => undefined);
}
