/**
 * Relay (spec 2.6, 3.2, 4.8): accepts a signed transaction for one step of an
 * envelope only if it is exactly what the envelope asked for, signed by the
 * treasury's wallet. A chain-backed treasury's step is claimed durably before
 * it is broadcast (see RelayService.relay); a sandbox treasury's is simulated
 * (`simulated: true`, tx_hash is the hash of the signed transaction). The
 * action is recorded when the envelope's last step is relayed.
 */
import { createHash } from "node:crypto";
import { parseTransaction, type TransactionSerialized } from "viem";
import { recoverTransactionSigner } from "../lib/recover-signer";
import { verifySignedTransaction, type VerifiedTransaction } from "../chain/signed-transaction";
import { usdcToNumber } from "../domain/money";
import { positionOf } from "../domain/portfolio";
import { ltvPct } from "../domain/position";
import { TreasuryError } from "../lib/errors";
import type { EnvelopeRecord, StepRecord } from "../store/envelope-store";
import { mainStep, type ActionService } from "./action-service";
import type { ServiceContext } from "./context";

/**
 * The relay has no credential: its Idempotency-Keys are scoped to the signer
 * of the transaction (which nobody else can produce), so callers cannot squat
 * or collide with each other's keys.
 */
export async function relayScope(txId: string, signed: string): Promise<string> {
  try {
    const signer = await recoverTransactionSigner(signed as `0x${string}`);
    return `relay:${signer.toLowerCase()}`;
  } catch {
    return `relay:unsigned:${createHash("sha256").update(`${txId}\n${signed}`).digest("hex")}`;
  }
}

export class RelayService {
  constructor(
    private readonly ctx: ServiceContext<"envelopes">,
    private readonly actions: ActionService,
  ) {}

  /** a relay under this tx_id changes nothing but the store: its treasury is simulated (no chain behind it) */
  async storeOnly(txId: string): Promise<boolean> {
    const envelope = await this.ctx.stores.envelopes.get((await this.ctx.stores.envelopes.step(txId))?.envelopeTxId ?? txId);
    return envelope !== undefined && !this.actions.chainBacked(await this.actions.treasury(envelope.treasuryId));
  }

  /**
   * Relay one signed step. Sandbox treasuries (no RPC): checked and recorded
   * in one transaction. Chain-backed ones, in this order:
   *   1. checks: the step awaits a signature, earlier steps are relayed, the
   *      envelope has not expired, the transaction is exactly the step's and
   *      signed by the treasury's wallet, its nonce is the wallet's next one,
   *      and it does not revert in simulation;
   *   2. claim: the step becomes `broadcasting` with the transaction's hash
   *      and nonce, in one transaction with the re-check (a second signature
   *      of the step is refused here, never sent);
   *   3. send, then wait for the receipt: mined -> recorded (the action at the
   *      last step); reverted or refused by the node -> the step awaits a new
   *      signature; no receipt in time -> 202 `broadcasting`, reconciled by
   *      the next relay of the step, GET /api/v1/relay/{tx_id} or a read of
   *      the treasury.
   */
  async relay(txId: string, signed: `0x${string}`): Promise<{ status: 200 | 202; body: Record<string, unknown> }> {
    let step = await this.ctx.stores.envelopes.step(txId);
    if (!step) {
      const envelope = await this.ctx.stores.envelopes.get(txId);
      if (!envelope) throw new TreasuryError("envelope_not_found", `no unsigned transaction ${txId}`);
      return this.relayEnvelope(envelope, signed);
    }
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await this.actions.treasury(envelope.treasuryId);
    if (step.status === "broadcasting") {
      await this.reconcileStep(step);
      step = (await this.ctx.stores.envelopes.step(txId))!;
      if (step.status === "broadcasting") throw this.inFlight(step);
    }
    if (step.status === "relayed") {
      // the same signed transaction again (a client retrying after a crash or a lost answer): its receipt
      if (step.signedTransaction?.toLowerCase() === signed.toLowerCase() && step.receipt) return { status: 200, body: step.receipt };
      throw this.alreadyRelayed(step);
    }
    await this.refuseExpired(envelope);
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const next = steps.find((s) => s.status !== "relayed");
    if (next && next.txId !== txId) {
      throw new TreasuryError("step_out_of_order", `relay step ${next.seq} (${next.kind}, ${next.txId}) first${next.status === "broadcasting" ? "; it is being broadcast" : ""}`, { next_tx_id: next.txId });
    }
    const verified = await verifySignedTransaction(signed, {
      to: step.to,
      data: step.data,
      value: step.value,
      chainId: envelope.chainId,
      signer: treasury.walletAddress,
    });
    if (!this.actions.chainBacked(treasury)) return { status: 200, body: await this.recordSimulated(txId, signed, verified) };

    const chain = treasury.chain;
    const txNonce = parseTransaction(signed as TransactionSerialized).nonce ?? 0;
    // the nonce and the simulation are asked of the node together; the nonce's refusal comes first
    const [expectedNonce, simulated] = await Promise.all([
      this.actions.chain.pendingNonce(chain, verified.signer),
      this.actions.chain.simulate(chain, { from: verified.signer, to: step.to, data: step.data, value: BigInt(step.value) }).then(
        () => undefined,
        (err: unknown) => ({ err }),
      ),
    ]);
    if (txNonce !== expectedNonce) throw nonceNotNext(txNonce, expectedNonce, verified.signer, chain);
    if (simulated) throw simulated.err;
    const claimed = await this.ctx.stores.envelopes.claimStep(txId, { txHash: verified.hash, signed, signer: verified.signer, nonce: txNonce, at: this.ctx.clock.now().toISOString() });
    if (!claimed) {
      const fresh = (await this.ctx.stores.envelopes.step(txId))!;
      throw fresh.status === "relayed" ? this.alreadyRelayed(fresh) : fresh.status === "broadcasting" ? this.inFlight(fresh) : new TreasuryError("step_out_of_order", "an earlier step of this envelope is not relayed yet");
    }
    try {
      await this.actions.chain.send(chain, signed);
    } catch (err) {
      // refused by the node: if it never reached the node, the step awaits a new signature
      if (!(await this.actions.chain.known(chain, verified.hash).catch(() => true))) {
        await this.ctx.stores.envelopes.unclaimStep(txId, verified.hash, `refused by the node: ${err instanceof TreasuryError ? err.shortMessage : String(err)}`, this.ctx.clock.now().toISOString());
        throw err;
      }
    }
    const settled = await this.settle(txId, verified.hash, this.ctx.config.relayReceiptTimeoutMs);
    return settled;
  }

  private async refuseExpired(envelope: EnvelopeRecord): Promise<void> {
    const now = this.ctx.clock.now();
    if (envelope.status === "expired" || now.toISOString() >= envelope.expiresAt) {
      if (envelope.status === "awaiting_signature") await this.ctx.stores.envelopes.setStatus(envelope.txId, "expired", null);
      throw new TreasuryError("envelope_expired", `envelope ${envelope.txId} expired at ${envelope.expiresAt}; request a new one`, { expired_at: envelope.expiresAt });
    }
  }

  /**
   * The one-signature path (spec 2.5): the caller signed the envelope's one
   * `unsigned_transaction` (the Aave Pool call) and relays it under the
   * envelope's tx_id. The other steps of the envelope:
   *   - already relayed by a steps-aware client: the main step relays as usual;
   *   - in the sandbox (a local test chain, chain/sandbox-chain.ts): provided
   *     without a signature, each claimed on its step before the storage write
   *     (prerequisites before the call is sent; trailing ones, the borrow fee,
   *     once it is mined), the envelope flagged `one_signature`;
   *   - a simulated treasury (no RPC): provided in simulation with the call;
   *   - elsewhere: 409 prerequisite_steps_required naming them.
   */
  private async relayEnvelope(envelope: EnvelopeRecord, signed: `0x${string}`): Promise<{ status: 200 | 202; body: Record<string, unknown> }> {
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const main = mainStep(steps);
    if (main.status !== "awaiting_signature") return this.relay(main.txId, signed);
    const others = steps.filter((s) => s.txId !== main.txId && s.status !== "relayed");
    if (others.length === 0) return this.relay(main.txId, signed);
    await this.refuseExpired(envelope);
    const inFlight = others.find((s) => s.status === "broadcasting");
    if (inFlight) throw this.inFlight(inFlight);
    const treasury = await this.actions.treasury(envelope.treasuryId);
    const verified = await verifySignedTransaction(signed, { to: main.to, data: main.data, value: main.value, chainId: envelope.chainId, signer: treasury.walletAddress });
    if (!this.actions.chainBacked(treasury)) return { status: 200, body: await this.recordSimulated(main.txId, signed, verified, { provide: others, envelopeTxId: envelope.txId }) };
    // the sandbox provides approvals, transfers and swaps, never another Aave call: an envelope of several (an exit) is relayed step by step
    if (!(await this.actions.sandboxed(treasury)) || others.some((s) => s.kind === "pool_call")) {
      throw new TreasuryError("prerequisite_steps_required",
        `this envelope needs ${others.length} more signed step(s) besides its unsigned_transaction on ${treasury.chain}: relay each step of \`steps\` in seq order under its own tx_id (${others.map((s) => `${s.seq} ${s.kind}`).join(", ")})`,
        { prerequisite_steps: others.map((s) => ({ tx_id: s.txId, seq: s.seq, kind: s.kind, to: s.to, data: s.data, value: s.value, description: (s.summary as { description?: string }).description ?? null })) },
      );
    }
    const chain = treasury.chain;
    const txNonce = parseTransaction(signed as TransactionSerialized).nonce ?? 0;
    const expectedNonce = await this.actions.chain.pendingNonce(chain, verified.signer);
    if (txNonce !== expectedNonce) throw nonceNotNext(txNonce, expectedNonce, verified.signer, chain);
    await this.actions.fundForAction(treasury, envelope);
    // claim the prerequisites and flag the envelope in one transaction, before any storage write
    const before = others.filter((s) => s.seq < main.seq);
    const at = this.ctx.clock.now().toISOString();
    const pending = { object: "provided_step", provided_by: "sandbox", method: "anvil_setStorageAt", effect: "claimed; being provided" };
    await this.ctx.tx.transaction(async () => {
      for (const s of before) {
        if (!(await this.ctx.stores.envelopes.provideStep(s.txId, pending, at))) throw new TreasuryError("step_in_flight", `step ${s.seq} (${s.kind}) of ${envelope.txId} is being relayed by another request; retry`);
      }
      const fresh = (await this.ctx.stores.envelopes.get(envelope.txId))!;
      await this.ctx.stores.envelopes.setParams(envelope.txId, { ...fresh.params, one_signature: true });
    });
    for (const s of before) {
      try {
        const provided = await this.actions.sandbox.provide(chain, treasury.walletAddress, s, { outputDelivered: prepared(envelope, s) === "output_delivered" });
        await this.ctx.stores.envelopes.provideReceipt(s.txId, { ...provided, tx_id: s.txId, seq: s.seq, kind: s.kind });
      } catch (err) {
        for (const u of before) await this.ctx.stores.envelopes.unprovideStep(u.txId);
        throw new TreasuryError("chain_unavailable", `the sandbox could not provide step ${s.seq} (${s.kind}): ${(err as Error).message}`);
      }
    }
    return this.relay(main.txId, signed);
  }

  /** the state of a step's relay (or, for an envelope's tx_id, of its main call), reconciled with the chain first (GET /api/v1/relay/{tx_id}) */
  async status(txId: string): Promise<Record<string, unknown>> {
    let step = await this.ctx.stores.envelopes.step(txId);
    if (!step) {
      const envelope = await this.ctx.stores.envelopes.get(txId);
      if (envelope) step = mainStep(await this.ctx.stores.envelopes.steps(envelope.txId));
    }
    if (!step) throw new TreasuryError("envelope_not_found", `no unsigned transaction ${txId}`);
    if (step.status === "broadcasting") {
      await this.reconcileStep(step);
      step = (await this.ctx.stores.envelopes.step(txId))!;
    }
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    return {
      object: "relay_status",
      tx_id: step.txId,
      envelope_tx_id: envelope.txId,
      seq: step.seq,
      kind: step.kind,
      status: step.status,
      tx_hash: step.txHash,
      receipt: step.receipt,
      failed_attempts: step.failedAttempts,
      envelope_status: envelope.status,
    };
  }

  /** reconcile every broadcasting step of a treasury with the chain (called by reads of the treasury) */
  async reconcileTreasury(treasuryId: string): Promise<void> {
    for (const step of await this.ctx.stores.envelopes.broadcastingFor(treasuryId)) await this.reconcileStep(step).catch(() => undefined);
  }

  /**
   * A `broadcasting` step against the chain: mined -> recorded or reverted;
   * still pending -> unchanged; unknown to the node -> dropped when its nonce
   * was used by another transaction, else sent again (the same signed bytes:
   * the same hash, it cannot execute twice).
   */
  async reconcileStep(step: StepRecord): Promise<void> {
    if (step.status !== "broadcasting" || !step.txHash || !step.signedTransaction) return;
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await this.actions.treasury(envelope.treasuryId);
    if (!this.actions.chainBacked(treasury)) return;
    const chain = treasury.chain;
    const hash = step.txHash as `0x${string}`;
    const mined = await this.actions.chain.receipt(chain, hash, 0);
    if (mined) {
      await this.settle(step.txId, hash, 0).catch(() => undefined);
      return;
    }
    if (await this.actions.chain.known(chain, hash)) return; // pending
    const used = await this.actions.chain.minedNonce(chain, step.signer as `0x${string}`);
    if (step.txNonce !== null && used > step.txNonce) {
      await this.ctx.stores.envelopes.unclaimStep(step.txId, hash, `dropped: nonce ${step.txNonce} was used by another transaction`, this.ctx.clock.now().toISOString());
      return;
    }
    await this.actions.chain.send(chain, step.signedTransaction as `0x${string}`).catch(() => undefined);
  }

  /** wait for a claimed step's receipt and record the outcome */
  private async settle(txId: string, hash: `0x${string}`, timeoutMs: number): Promise<{ status: 200 | 202; body: Record<string, unknown> }> {
    const step = (await this.ctx.stores.envelopes.step(txId))!;
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await this.actions.treasury(envelope.treasuryId);
    const chain = treasury.chain;
    const mined = await this.actions.chain.receipt(chain, hash, timeoutMs);
    if (!mined) {
      return {
        status: 202,
        body: {
          sandbox: true,
          object: "relay_receipt",
          tx_id: txId,
          tx_hash: hash,
          simulated: false,
          chain: envelope.chain,
          chain_id: envelope.chainId,
          status: "broadcasting",
          status_url: this.ctx.links.url(`/api/v1/relay/${txId}`),
          message: "the transaction was sent and is not mined yet; its step stays claimed (no other signature of it will be sent). Poll status_url or relay the same step again.",
          envelope_tx_id: envelope.txId,
        },
      };
    }
    if (mined.status !== "success") {
      await this.ctx.stores.envelopes.unclaimStep(txId, hash, "reverted", this.ctx.clock.now().toISOString());
      throw new TreasuryError("transaction_reverted", `transaction ${hash} was mined but reverted on ${chain}; nothing was recorded. Sign the step again with the wallet's next nonce`, { tx_hash: hash });
    }
    if (envelope.params.one_signature === true && step.kind === "pool_call") await this.provideTrailing(envelope, step);
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const last = steps.every((s) => s.txId === txId || s.status === "relayed");
    const chainAfter = last ? await this.actions.chain.position(chain, treasury.walletAddress) : null;
    let won = false;
    const body = await this.ctx.tx.transaction(async () => {
        won = false;
        const fresh = (await this.ctx.stores.envelopes.step(txId))!;
        if (fresh.status === "relayed") {
          // settled meanwhile by a concurrent reconciliation of the same transaction: the same receipt
          if (fresh.txHash === hash && fresh.receipt) return fresh.receipt;
          throw this.alreadyRelayed(fresh);
        }
        const at = this.ctx.clock.now();
        const current = await this.actions.treasury(envelope.treasuryId);
        const execution = last && chainAfter ? await this.actions.recordChainExecution(current, envelope, chainAfter, at) : undefined;
        const receipt = this.receiptOf(envelope, step, {
          oneSignature: envelope.params.one_signature === true,
          provided: steps.filter((s) => s.txId !== txId && s.txHash === null && s.receipt),
          txHash: hash,
          simulated: false,
          block: { number: Number(mined.blockNumber), gasUsed: Number(mined.gasUsed) },
          resultingLtv: chainAfter ? ltvPct(chainAfter) : ltvPct(positionOf(current.holdings)),
          last,
          remaining: steps.filter((s) => s.status !== "relayed" && s.txId !== txId).length,
          execution,
          signer: fresh.signer!,
          at,
        });
        if (!await this.ctx.stores.envelopes.finishStep(txId, hash, receipt, at.toISOString())) throw this.alreadyRelayed((await this.ctx.stores.envelopes.step(txId))!);
        if (last) await this.ctx.stores.envelopes.setStatus(envelope.txId, "relayed", at.toISOString());
        won = true;
        return receipt;
      });
    // the wallet swapped for real: the output the sandbox delivered ahead goes back to the pool (by the one settlement that recorded the step)
    if (won && step.kind === "swap" && prepared(envelope, step) === "output_delivered") await this.actions.sandbox.takeBack(chain, step).catch(() => undefined);
    return { status: 200, body };
  }

  /**
   * The steps after the main call of a one-signature envelope (the borrow's
   * fee transfer, paid from what was borrowed): claimed, then provided by the
   * sandbox, once the call is mined.
   */
  private async provideTrailing(envelope: EnvelopeRecord, main: StepRecord): Promise<void> {
    const treasury = await this.actions.treasury(envelope.treasuryId);
    const at = this.ctx.clock.now().toISOString();
    for (const s of await this.ctx.stores.envelopes.steps(envelope.txId)) {
      if (s.seq <= main.seq || s.status !== "awaiting_signature") continue;
      if (!(await this.ctx.stores.envelopes.provideStep(s.txId, { object: "provided_step", provided_by: "sandbox", method: "anvil_setStorageAt", effect: "claimed; being provided" }, at))) continue;
      try {
        const provided = await this.actions.sandbox.provide(treasury.chain, treasury.walletAddress, s);
        await this.ctx.stores.envelopes.provideReceipt(s.txId, { ...provided, tx_id: s.txId, seq: s.seq, kind: s.kind });
      } catch (err) {
        await this.ctx.stores.envelopes.unprovideStep(s.txId);
        throw err;
      }
    }
  }

  /** a sandbox treasury: the step is checked and the action applied to the sandbox ledger in one transaction */
  private async recordSimulated(txId: string, signed: `0x${string}`, verified: VerifiedTransaction, one?: { provide: StepRecord[]; envelopeTxId: string }): Promise<Record<string, unknown>> {
    return await this.ctx.tx.transaction(async () => {
      const step = (await this.ctx.stores.envelopes.step(txId))!;
      if (step.status === "relayed") throw this.alreadyRelayed(step);
      const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
      const at = this.ctx.clock.now();
      for (const s of one?.provide ?? []) {
        const provided = { object: "provided_step", provided_by: "sandbox", method: "simulation", effect: `${s.kind} applied with the action to the sandbox ledger`, tx_id: s.txId, seq: s.seq, kind: s.kind };
        if (!(await this.ctx.stores.envelopes.provideStep(s.txId, provided, at.toISOString()))) throw new TreasuryError("step_in_flight", `step ${s.seq} (${s.kind}) of ${envelope.txId} was relayed meanwhile; retry`);
      }
      const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
      const last = steps.every((s) => s.txId === txId || s.status === "relayed");
      const current = await this.actions.treasury(envelope.treasuryId);
      let resultLtv = ltvPct(positionOf(current.holdings));
      let execution: Record<string, unknown> | undefined;
      if (last) {
        // the fee as signed in the envelope, not today's tier
        const plan = await this.actions.plan(current, { action: envelope.action, amountMicro: envelope.amountMicro, params: envelope.params as never }, null, this.actions.envelopeFee(envelope));
        execution = await this.actions.execute(current, plan, { origin: "relay", envelopeTxId: envelope.txId, trigger: "relayed_signature", settled: false }, at);
        resultLtv = plan.ltvAfter;
      }
      const receipt = this.receiptOf(envelope, step, {
        oneSignature: one !== undefined,
        provided: steps.filter((s) => s.txId !== txId && s.txHash === null && s.receipt),
        txHash: verified.hash,
        simulated: true,
        resultingLtv: resultLtv,
        last,
        remaining: steps.filter((s) => s.status !== "relayed" && s.txId !== txId).length,
        execution,
        signer: verified.signer,
        at,
      });
      if (!await this.ctx.stores.envelopes.markStepRelayed(txId, verified.hash, signed, receipt, at.toISOString())) throw this.alreadyRelayed((await this.ctx.stores.envelopes.step(txId))!);
      if (last) await this.ctx.stores.envelopes.setStatus(envelope.txId, "relayed", at.toISOString());
      return receipt;
    });
  }

  private receiptOf(
    envelope: EnvelopeRecord,
    step: StepRecord,
    r: {
      oneSignature: boolean;
      provided: StepRecord[];
      txHash: string;
      simulated: boolean;
      block?: { number: number; gasUsed: number };
      resultingLtv: number;
      last: boolean;
      remaining: number;
      execution?: Record<string, unknown>;
      signer: string;
      at: Date;
    },
  ): Record<string, unknown> {
    return {
      sandbox: true,
      object: "relay_receipt",
      // the one-signature path answers under the envelope's tx_id, the steps path under the step's
      tx_id: r.oneSignature ? envelope.txId : step.txId,
      tx_hash: r.txHash,
      simulated: r.simulated,
      ...(r.block ? { block_number: r.block.number, gas_used: r.block.gasUsed } : {}),
      chain: envelope.chain,
      chain_id: envelope.chainId,
      status: "confirmed",
      result: {
        action: envelope.action,
        amount_usdc: usdcToNumber(envelope.amountMicro),
        resulting_ltv: r.resultingLtv,
        step: step.kind,
        sequence_complete: r.last,
        remaining_steps: r.remaining,
        ...(r.execution ? { receipt: r.execution } : {}),
      },
      ...(r.provided.length > 0 ? { provided_steps: r.provided.map((s) => s.receipt) } : {}),
      ...(r.oneSignature ? { step_tx_id: step.txId } : {}),
      envelope_tx_id: envelope.txId,
      signer: r.signer,
      relayed_at: r.at.toISOString(),
    };
  }

  private alreadyRelayed(step: StepRecord): TreasuryError {
    return new TreasuryError("already_relayed", `${step.txId} was already relayed as ${step.txHash}`, { tx_hash: step.txHash, receipt: step.receipt });
  }

  private inFlight(step: StepRecord): TreasuryError {
    return new TreasuryError("step_in_flight", `${step.txId} is being broadcast as ${step.txHash}; no other signature of it is sent. Poll GET /api/v1/relay/${step.txId}`, {
      tx_hash: step.txHash,
      status_url: this.ctx.links.url(`/api/v1/relay/${step.txId}`),
    });
  }
}

function nonceNotNext(received: number, expected: number, signer: string, chain: string): TreasuryError {
  return new TreasuryError("nonce_not_next", `the transaction's nonce is ${received}; ${signer}'s next nonce on ${chain} is ${expected}. Sign it with nonce ${expected}`, {
    expected_nonce: expected,
    received_nonce: received,
  });
}

/** what the sandbox prepared for a step when the envelope was created (ActionService.prepareSandboxEnvelope) */
function prepared(envelope: EnvelopeRecord, step: StepRecord): string | null {
  const list = Array.isArray(envelope.params.sandbox_prepared) ? (envelope.params.sandbox_prepared as string[]) : [];
  const hit = list.find((p) => p.startsWith(`${step.seq}:`));
  return hit ? hit.slice(hit.indexOf(":") + 1) : null;
}
