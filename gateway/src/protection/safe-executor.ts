/**
 * The executor of operators' Safe transactions (issue 15): a managed action
 * on a Safe, proposed by the gateway (services/action-service.ts) and signed
 * by the Safe's owners (services/safe-transaction-service.ts), is executed
 * here with `execTransaction`, sent and paid for by the service's automation
 * key (this process holds it; the gateway holds none). The automation key is
 * never an owner: without the owners' signatures the Safe refuses it.
 *
 * - once: a Safe transaction is claimed (store/safe-transaction-store.ts, a
 *   lease) before anything is sent, and the signed transaction (hash and raw
 *   bytes) is written on the claim before it is sent. An executor that takes
 *   over a lapsed claim re-sends those bytes and reads their receipt; the
 *   Safe's nonce makes a second execution impossible on chain anyway;
 * - only the Safe's own registration: an item of a treasury that is not the
 *   managed registration the Safe itself proved fails (ownership_not_proven)
 *   and nothing is sent, whatever signatures it carries;
 * - the safety rail again at execution: the action is re-planned against the
 *   Safe's position at that moment (the ceiling for a borrow, the balances for
 *   the rest); refused, it fails with the rail's error and nothing is sent;
 * - then it is simulated (eth_call); a revert fails it with the failing call
 *   and its decoded reason;
 * - gas budget: the automation key pays the execution, so its estimated cost
 *   (gas x max fee x the oracle's ETH price) must fit the Safe's monthly
 *   budget for executions (SAFE_EXEC_GAS_USD_PER_MONTH, default 5 USD, like
 *   the protection caps); what each execution cost is recorded;
 * - executed: the receipt moves to `completed` with the transaction hash and
 *   the position read back from the chain, and the fee is audited (settled)
 *   in the same database transaction; failed: the receipt moves to `failed`
 *   with the reason and no fee is audited (none was taken).
 */
import { declarationOf } from "@treasury/core/actions";
import { decodeAbiParameters, encodeFunctionData, hexToBigInt, keccak256, parseEventLogs, size, sliceHex, type Hex, type TransactionReceipt } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { SAFE_ABI, safeTxArgs, SIMULATE_TX_ACCESSOR_ABI } from "@treasury/core/contracts/safe";
import { simulateTxAccessor } from "@treasury/core/contracts/safe-deployments";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { ChainGateway, chainHealthScore, describeRevert, describeRevertData, revertDataOf, usdOfWei } from "../chain/chain-gateway";
import { landedReceipt } from "../chain/landed";
import { packSignatures, safeTxFor } from "../chain/safe-transaction";
import type { ActionParams } from "@treasury/core/domain/sandbox-ledger";
import { ltvPct } from "@treasury/core/domain/position";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import { ActionService } from "../services/action-service";
import type { ServiceContext } from "../services/context";
import { ExecutionRecorder } from "../services/execution-recorder";
import { isSafesOwnRegistration, SafeTransactionService, safeTransactionRef, type SafeState } from "../services/safe-transaction-service";
import type { SafeTransactionRecord } from "../store/safe-transaction-store";
import { LostClaim } from "./lost-claim";

export interface SafeExecution {
  id: string;
  treasuryId: string;
  outcome: "executed" | "failed" | "expired" | "awaiting_signatures" | "in_progress" | "waiting";
  detail?: string;
  txHash?: Hex;
}

/** what the automation key may spend executing one Safe's transactions in a calendar month (UTC) */
export const SAFE_EXEC_GAS_USD_PER_MONTH = Number(process.env.SAFE_EXEC_GAS_USD_PER_MONTH ?? 5);

/** gas limit of one execTransaction (an action's batch is well under 1M on Base; unused gas is not paid) */
const EXEC_GAS_LIMIT = 3_000_000n;
const RECEIPT_TIMEOUT_MS = 60_000;

type Ctx = ServiceContext<
  "apiKeys" | "automationNonces" | "envelopes" | "events" | "executions" | "fees" | "positionSamples" | "safeTransactions" | "slots" | "treasuries"
>;

export class SafeExecutor {
  private readonly chain: ChainGateway;
  private readonly actions: ActionService;
  private readonly safes: SafeTransactionService;
  private readonly recorder: ExecutionRecorder;
  private readonly automation;
  private readonly holder = newId("eng");
  private running = false;

  constructor(
    private readonly ctx: Ctx,
    private readonly opts: { rpcUrls: Partial<Record<TreasuryChain, string>>; automationKey: Hex; gasUsdPerMonth?: number },
  ) {
    this.chain = new ChainGateway(opts.rpcUrls, 10_000);
    this.actions = new ActionService(ctx, undefined, this.chain);
    this.safes = new SafeTransactionService(ctx, this.chain);
    this.recorder = new ExecutionRecorder(ctx);
    this.automation = privateKeyToAccount(opts.automationKey);
  }

  get address(): `0x${string}` {
    return this.automation.address;
  }

  /** one pass: expire what waited too long, execute what its owners signed */
  async tick(): Promise<SafeExecution[]> {
    if (this.running) return [];
    this.running = true;
    try {
      const results: SafeExecution[] = [];
      for (const r of await this.ctx.stores.safeTransactions.expiredOpen(this.ctx.clock.now().toISOString())) results.push(await this.expire(r));
      for (const r of await this.ctx.stores.safeTransactions.executable(this.ctx.clock.now().toISOString())) {
        if (!this.chain.connected(r.chain)) continue;
        try {
          results.push(await this.consider(r));
        } catch (err) {
          if (err instanceof LostClaim) results.push({ id: r.id, treasuryId: r.treasuryId, outcome: "in_progress", detail: err.message });
          // the claim stays with what was sent on it; a later pass (or another executor once the lease lapses) settles it
          else
            results.push({
              id: r.id,
              treasuryId: r.treasuryId,
              outcome: "in_progress",
              detail: err instanceof Error ? err.message.split("\n")[0] : String(err),
            });
        }
      }
      return results;
    } finally {
      this.running = false;
    }
  }

  private async consider(r: SafeTransactionRecord): Promise<SafeExecution> {
    let state: SafeState | undefined;
    if (r.status === "awaiting_signatures") {
      // everything that costs nothing is checked before the claim
      state = await this.safes.safeState(r.chain, r.safe);
      const valid = r.signatures.filter((s) => state!.owners.includes(s.owner));
      if (valid.length < state.threshold)
        return { id: r.id, treasuryId: r.treasuryId, outcome: "awaiting_signatures", detail: `${valid.length} of ${state.threshold} owners signed` };
      if (BigInt(r.safeTx.nonce) > state.nonce)
        return { id: r.id, treasuryId: r.treasuryId, outcome: "waiting", detail: `the Safe's nonce is ${state.nonce}; this transaction has ${r.safeTx.nonce}` };
    }
    const claimed = await this.ctx.stores.safeTransactions.claim(r.id, this.holder, this.ctx.clock.now());
    if (!claimed) return { id: r.id, treasuryId: r.treasuryId, outcome: "in_progress", detail: "another executor holds it" };
    if (claimed.sent) return this.settle(claimed, await this.landed(claimed, claimed.sent));
    return this.execute(claimed, state ?? (await this.safes.safeState(r.chain, r.safe)));
  }

  private async execute(r: SafeTransactionRecord, state: SafeState): Promise<SafeExecution> {
    // only the Safe's own registration's items execute: the SafeTx hash does not name the treasury, so an item another
    // registration queued (before this rule) could carry the owners' signatures of the Safe's own item
    if (!(await isSafesOwnRegistration(this.ctx.stores.treasuries, r.treasuryId, r.safe))) {
      return this.fail(
        r,
        "ownership_not_proven",
        `treasury ${r.treasuryId} is not the registration the Safe ${r.safe} itself proved: its Safe transactions are never executed (nothing was sent)`,
      );
    }
    if (BigInt(r.safeTx.nonce) < state.nonce) {
      return this.fail(
        r,
        "safe_nonce_used",
        `the Safe's nonce is ${state.nonce}: another Safe transaction used nonce ${r.safeTx.nonce} (nothing of this one was executed by the service)`,
      );
    }
    // the safety rail again, against the position at this moment
    const treasury = await this.actions.treasury(r.treasuryId);
    const position = await this.chain.position(r.chain, r.safe);
    try {
      await this.actions.plan(treasury, { action: r.action, amountMicro: r.amountMicro, params: r.request.params as ActionParams }, position);
    } catch (err) {
      if (err instanceof TreasuryError) return this.fail(r, err.code, `checked again at execution: ${err.shortMessage}`);
      throw err;
    }
    const owners = r.signatures.filter((s) => state.owners.includes(s.owner));
    const t = r.safeTx;
    const data = encodeFunctionData({
      abi: SAFE_ABI,
      functionName: "execTransaction",
      args: [...safeTxArgs(t), packSignatures(owners)],
    });
    const client = this.chain.client(r.chain);
    try {
      await client.call({ account: this.automation.address, to: r.safe, data, gas: EXEC_GAS_LIMIT });
    } catch (err) {
      return this.fail(r, "transaction_would_revert", `the Safe transaction would revert (${describeRevert(err)}): ${await this.failingStep(r)}`);
    }
    const fees = await client.estimateFeesPerGas();
    // the gas budget: the automation key pays, so the cost is checked before anything is signed
    const gas = await client.estimateGas({ account: this.automation.address, to: r.safe, data }).catch(() => EXEC_GAS_LIMIT);
    const ethPrice = await this.chain.ethPrice(r.chain);
    const costUsd = usdOfWei(gas * fees.maxFeePerGas, ethPrice);
    const budget = this.opts.gasUsdPerMonth ?? SAFE_EXEC_GAS_USD_PER_MONTH;
    const spent = await this.ctx.stores.safeTransactions.monthGasUsd(r.safe, this.ctx.clock.now());
    if (spent + costUsd > budget) {
      return this.fail(
        r,
        "gas_budget_exhausted",
        `executing it would cost about ${costUsd.toFixed(6)} USD of gas; ${spent.toFixed(6)} USD of this Safe's ${budget} USD monthly budget for executions is spent; nothing was sent`,
      );
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      // the node's count is a floor; the store gives out the nonce, in the transaction that writes the signed bytes on the claim
      const pending = await client.getTransactionCount({ address: this.automation.address, blockTag: "pending" });
      const now = this.ctx.clock.now();
      const sent = await this.ctx.tx.transaction(async () => {
        const nonce = await this.ctx.stores.automationNonces.allocate(r.chain, this.automation.address, pending, now);
        const raw = await this.automation.signTransaction({
          type: "eip1559",
          chainId: AAVE_MARKETS[r.chain].chainId,
          nonce,
          to: r.safe,
          value: 0n,
          gas: EXEC_GAS_LIMIT,
          data,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        const signed = { hash: keccak256(raw), raw, nonce };
        if (!(await this.ctx.stores.safeTransactions.recordSent(r.id, this.holder, signed, now))) throw new LostClaim("this Safe transaction", "executor");
        return signed;
      });
      const receipt = await this.landed(r, sent);
      if (receipt) return this.settle(r, receipt);
    }
    throw new Error("the automation key's nonce was taken three times in a row");
  }

  /**
   * Which call of the batch fails, found with Safe's SimulateTxAccessor run
   * in the Safe's own context (simulateAndRevert) on ever longer prefixes of
   * the batch, and its reason. MultiSendCallOnly drops a failing call's
   * revert data, so the reason is the call's own only when nothing ran before
   * it (the first call): later calls depend on the earlier ones' effects.
   */
  private async failingStep(r: SafeTransactionRecord): Promise<string> {
    const client = this.chain.client(r.chain);
    const chainId = AAVE_MARKETS[r.chain].chainId;
    const simulate = async (calls: SafeTransactionRecord["calls"]): Promise<{ success: boolean; returnData: Hex } | null> => {
      const t = safeTxFor(
        chainId,
        calls.map((c) => ({ to: c.to, data: c.data, value: "0" as const })),
        0n,
      );
      const payload = encodeFunctionData({ abi: SIMULATE_TX_ACCESSOR_ABI, functionName: "simulate", args: [t.to, BigInt(t.value), t.data, t.operation] });
      try {
        await client.call({
          account: this.automation.address,
          to: r.safe,
          data: encodeFunctionData({ abi: SAFE_ABI, functionName: "simulateAndRevert", args: [simulateTxAccessor(chainId), payload] }),
        });
        return null; // simulateAndRevert always reverts
      } catch (err) {
        const data = revertDataOf(err);
        // simulateAndRevert: success (32 bytes), size (32 bytes), then simulate's own answer
        if (!data || size(data) < 64 || hexToBigInt(sliceHex(data, 0, 32)) !== 1n) return null;
        const [, success, returnData] = decodeAbiParameters([{ type: "uint256" }, { type: "bool" }, { type: "bytes" }], sliceHex(data, 64));
        return { success, returnData };
      }
    };
    try {
      for (let k = 1; k <= r.calls.length; k++) {
        const result = await simulate(r.calls.slice(0, k));
        if (!result) return "the Safe's simulation gave no answer";
        if (result.success) continue;
        const call = r.calls[k - 1]!;
        const what = `call ${k} of ${r.calls.length} (${call.kind}: ${String(call.summary.description ?? "")}) reverts`;
        return k === 1
          ? `${what}: ${describeRevertData(result.returnData)}`
          : `${what} after the ${k - 1} before it (MultiSendCallOnly does not return its reason)`;
      }
      return "every call succeeds alone in the Safe's simulation; the batch fails as a whole (gas or the Safe's own checks)";
    } catch (err) {
      return `the failing call could not be found: ${describeRevert(err)}`;
    }
  }

  /** send signed bytes again and wait for their receipt (chain/landed.ts); null when their nonce went to another transaction */
  private landed(r: SafeTransactionRecord, sent: { hash: Hex; raw: Hex; nonce: number }): Promise<TransactionReceipt | null> {
    return landedReceipt(this.chain.client(r.chain), this.automation.address, sent, { timeoutMs: RECEIPT_TIMEOUT_MS });
  }

  /** the end of a sent execution, from its receipt (null: its nonce went elsewhere, and the Safe transaction did not execute) */
  private async settle(r: SafeTransactionRecord, receipt: TransactionReceipt | null): Promise<SafeExecution> {
    if (!receipt) {
      const state = await this.safes.safeState(r.chain, r.safe);
      if (state.nonce > BigInt(r.safeTx.nonce)) return this.fail(r, "safe_nonce_used", `the Safe's nonce moved past ${r.safeTx.nonce} without this execution`);
      await this.ctx.stores.safeTransactions.release(r.id, this.holder, this.ctx.clock.now().toISOString());
      return {
        id: r.id,
        treasuryId: r.treasuryId,
        outcome: "in_progress",
        detail: "the automation transaction was replaced before it was mined; tried again on the next pass",
      };
    }
    const gasUsd = usdOfWei(receipt.gasUsed * receipt.effectiveGasPrice, await this.chain.ethPrice(r.chain));
    const events = parseEventLogs({ abi: SAFE_ABI, logs: receipt.logs.filter((l) => l.address.toLowerCase() === r.safe.toLowerCase()) });
    const ok =
      receipt.status === "success" && events.some((e) => e.eventName === "ExecutionSuccess" && e.args.txHash.toLowerCase() === r.safeTxHash.toLowerCase());
    if (!ok) {
      const how =
        receipt.status === "success"
          ? "the Safe reported ExecutionFailure (a call of the batch failed)"
          : "the transaction reverted (GS013: a call of the batch failed)";
      return this.fail(r, "transaction_reverted", `${how} in ${receipt.transactionHash}`, receipt.transactionHash, gasUsd);
    }
    const after = await this.chain.position(r.chain, r.safe);
    const now = this.ctx.clock.now();
    const treasury = await this.actions.treasury(r.treasuryId);
    await this.ctx.tx.transaction(async () => {
      if (
        !(await this.ctx.stores.safeTransactions.finish(r.id, this.holder, { status: "executed", txHash: receipt.transactionHash, gasUsd }, now.toISOString()))
      )
        throw new LostClaim("this Safe transaction", "executor");
      await this.ctx.stores.events.append(
        r.treasuryId,
        "safe_transaction.executed",
        { safe_transaction_id: r.id, status: "executed", tx_hash: receipt.transactionHash },
        { now },
      );
      await this.updateReceipt(r, {
        status: "completed",
        tx_hash: receipt.transactionHash,
        block_number: Number(receipt.blockNumber),
        ltv_after: ltvPct(after),
        health_score_after: chainHealthScore(after),
        ...(declarationOf(r.action).onExecuted?.(after) ?? {}),
        completed_at: now.toISOString(),
        safe_transaction: safeTransactionRef(this.ctx.links, r.id, r.safeTxHash, "executed"),
      });
      await this.recorder.audit(
        {
          treasury,
          action: r.action,
          amountMicro: r.amountMicro,
          fee: { feeMicro: r.feeMicro, feeBps: BigInt(r.request.feeBps), basis: r.request.feeBasis as never },
          origin: "managed",
          envelopeTxId: null,
          trigger: r.request.trigger,
          settled: true,
          at: now,
        },
        r.executionId,
      );
    });
    await this.ctx.stores.positionSamples.sample(r.treasuryId, {
      at: now.toISOString(),
      ltv: ltvPct(after),
      healthScore: chainHealthScore(after),
      collateralMicro: after.collateralMicro,
      debtMicro: after.debtMicro,
    });
    return { id: r.id, treasuryId: r.treasuryId, outcome: "executed", txHash: receipt.transactionHash };
  }

  private async fail(r: SafeTransactionRecord, error: string, message: string, txHash?: Hex, gasUsd?: number): Promise<SafeExecution> {
    const now = this.ctx.clock.now().toISOString();
    await this.ctx.tx.transaction(async () => {
      if (!(await this.ctx.stores.safeTransactions.finish(r.id, this.holder, { status: "failed", failure: { error, message }, txHash, gasUsd }, now)))
        throw new LostClaim("this Safe transaction", "executor");
      // a transaction that reached the chain and reverted was executed, and failed; one that never did is not an execution
      if (txHash)
        await this.ctx.stores.events.append(
          r.treasuryId,
          "safe_transaction.executed",
          { safe_transaction_id: r.id, status: "failed", tx_hash: txHash },
          { now: new Date(now) },
        );
      await this.updateReceipt(r, {
        status: "failed",
        failure: { error, message },
        ...(txHash ? { tx_hash: txHash } : {}),
        failed_at: now,
        safe_transaction: safeTransactionRef(this.ctx.links, r.id, r.safeTxHash, "failed"),
      });
    });
    return { id: r.id, treasuryId: r.treasuryId, outcome: "failed", detail: `${error}: ${message}`, txHash };
  }

  /** a Safe transaction nobody signed in time: expired, its receipt failed (nothing was executed, no fee) */
  private async expire(r: SafeTransactionRecord): Promise<SafeExecution> {
    const now = this.ctx.clock.now().toISOString();
    const message = `the Safe's owners did not sign it before ${r.expiresAt}; the service will not execute it`;
    const done = await this.ctx.tx.transaction(async () => {
      if (!(await this.ctx.stores.safeTransactions.markExpired(r.id, now))) return false;
      await this.updateReceipt(r, {
        status: "failed",
        failure: { error: "safe_transaction_not_open", message },
        failed_at: now,
        safe_transaction: safeTransactionRef(this.ctx.links, r.id, r.safeTxHash, "expired"),
      });
      return true;
    });
    return { id: r.id, treasuryId: r.treasuryId, outcome: done ? "expired" : "in_progress", detail: message };
  }

  private async updateReceipt(r: SafeTransactionRecord, changes: Record<string, unknown>): Promise<void> {
    const receipt = await this.ctx.stores.executions.receipt(r.treasuryId, r.executionId);
    if (receipt) await this.ctx.stores.executions.updateReceipt(r.executionId, { ...receipt, ...changes });
  }
}
