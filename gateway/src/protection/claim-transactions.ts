/**
 * The transactions of a trigger's claim: each is signed, written on the claim (hash and raw bytes), then sent,
 * so an engine that takes over a dead engine's claim sends the same bytes again (at most once on chain) and
 * reads their receipts. Waiting for a receipt (chain/landed.ts) renews the claim's lease and the engine's
 * heartbeat; a lost claim stops the wait (LostClaim).
 */
import { encodeFunctionData, keccak256, type TransactionReceipt } from "viem";
import { landedReceipt } from "../chain/landed";
import type { SentTransaction } from "../store/protection-claim-store";
import { LostClaim } from "./lost-claim";
import { moduleCall, type Call } from "./module-calls";
import type { Plan } from "./repayment-plan";
import type { EngineParts, Run } from "./trigger-run";

/** how long one pass waits for a transaction it sent before leaving it on the claim for a later pass */
const RECEIPT_TIMEOUT_MS = 60_000;

/**
 * Sign one call, write it on the claim, then send it and wait for its
 * receipt. A transaction whose nonce another one took (two engines, one key)
 * is signed again with the next nonce, a bounded number of times.
 */
export async function sendCall(parts: EngineParts, run: Run, call: Call, fees: Plan["fees"]): Promise<TransactionReceipt> {
  const { ctx, chain, automation } = parts;
  const client = chain.client(run.t.chain);
  const chainId = await client.getChainId();
  for (let attempt = 0; attempt < 3; attempt++) {
    const nonce = await client.getTransactionCount({ address: automation.address, blockTag: "pending" });
    const raw = await automation.signTransaction({
      type: "eip1559",
      chainId,
      nonce,
      to: run.d.module,
      value: 0n,
      gas: call.gas,
      ...fees,
      data: encodeFunctionData(moduleCall(call)),
    });
    const sent: SentTransaction = { hash: keccak256(raw), raw, nonce, call: call.kind };
    run.claim.sent.push(sent);
    if (!(await ctx.stores.protectionClaims.record(run.claim, ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
    const receipt = await awaitLanded(parts, run, sent);
    if (receipt) return receipt;
  }
  throw new Error("the automation key's nonce was taken three times in a row");
}

/** send signed bytes again and wait for their receipt (chain/landed.ts); null when their nonce went to another transaction */
export async function awaitLanded({ ctx, chain, automation }: EngineParts, run: Run, sent: SentTransaction): Promise<TransactionReceipt | null> {
  let renewed = Date.now();
  const receipt = await landedReceipt(chain.client(run.t.chain), automation.address, sent, {
    timeoutMs: RECEIPT_TIMEOUT_MS,
    whileWaiting: async () => {
      if (Date.now() - renewed <= 1_000) return;
      if (!(await ctx.stores.protectionClaims.renew(run.claim.treasuryId, run.claim.holder, ctx.clock.now()))) throw new LostClaim("this trigger", "engine");
      // a pass that waits on a transaction is still a pass: the engine stays on record as watching
      await ctx.stores.instances.beatEngine(run.claim.holder, automation.address, ctx.clock.now());
      renewed = Date.now();
    },
  });
  if (receipt) {
    run.receipts.set(sent.hash, receipt);
    run.gasWei += receipt.gasUsed * receipt.effectiveGasPrice;
  }
  return receipt;
}
