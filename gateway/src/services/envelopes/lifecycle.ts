/**
 * An envelope's life (spec 2.5, 2.6, 3.2), in one place:
 *
 *   create     the planned action's calls as ordered steps, `awaiting_signature` until ENVELOPE_TTL_MS
 *   expire     past its expiry, a relay of it is refused (envelope_expired) and it becomes `expired`
 *   claim      a step becomes `broadcasting` with its transaction's hash, signer and nonce, in the one
 *              store statement that re-checks it: a second signature of the step is refused here, never sent
 *   broadcast  the signed bytes to the node; refused by the node (never reached it): unclaimed
 *   settle     wait for the receipt: mined -> record; reverted -> unclaimed; none in time -> `broadcasting`
 *   reconcile  a `broadcasting` step against the chain: mined -> settle; pending -> unchanged; dropped
 *              (its nonce used by another transaction) -> unclaimed; unknown -> the same bytes sent again
 *   record     the step `relayed` with its receipt and, at the last step, the action's execution and fee
 *              audit (services/execution-recorder.ts) with the envelope's own fee, as signed, in one
 *              transaction. A chain-backed treasury's figures are read back from the chain; a simulated
 *              treasury's step is checked and recorded at once, the action applied to its sandbox ledger.
 *
 * The relay (relay-service.ts) decides whether a signed transaction may enter this life (exact call, right signer,
 * next nonce, earlier steps relayed); the sandbox's part (steps prepared or provided without a signature, swap output
 * taken back) is envelopes/sandbox-steps.ts; the receipts the record writes, envelopes/receipts.ts; the fee as signed, envelopes/fee.ts.
 */
import { declarationOf } from "@treasury/core/actions";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { positionOf } from "@treasury/core/domain/portfolio";
import { ltvPct } from "@treasury/core/domain/position";
import type { ActionParams } from "@treasury/core/domain/sandbox-ledger";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import { chainHealthScore, type ChainGateway, type ChainPosition } from "../../chain/chain-gateway";
import type { VerifiedTransaction } from "../../chain/signed-transaction";
import type { EnvelopeRecord, StepRecord } from "../../store/envelope-store";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";
import type { TreasuryBacking } from "../execution/backing";
import { plannedSteps, type Plan, type Planner } from "../execution/planner";
import type { ExecutionRecorder } from "../execution-recorder";
import { envelopeFee } from "./fee";
import { broadcastingReceipt, relayReceipt, simulatedProvision } from "./receipts";
import type { SandboxSteps } from "./sandbox-steps";

export const ENVELOPE_TTL_MS = 15 * 60 * 1000;
/** `envelope.expiring` is written this long before an envelope awaiting signature expires */
export const EXPIRING_NOTICE_MS = 2 * 60 * 1000;

/** what relaying a step came to; the route answers 200 for `relayed` and `replayed`, 202 for `broadcasting` */
export type RelayOutcome =
  /** the step is recorded (with the action's execution when it was the last) */
  | { kind: "relayed"; result: Record<string, unknown> }
  /** the same signed transaction relayed again (a retry after a lost answer): the step's receipt */
  | { kind: "replayed"; result: Record<string, unknown> }
  /** sent, not mined in time: the step stays claimed, reconciled later */
  | { kind: "broadcasting"; result: Record<string, unknown> };

type Ctx = ServiceContext<"envelopes" | "events" | "treasuries">;

export class EnvelopeLifecycle {
  constructor(
    private readonly ctx: Ctx,
    private readonly parts: { backing: TreasuryBacking; planner: Planner; recorder: ExecutionRecorder; sandboxSteps: SandboxSteps; chain: ChainGateway },
  ) {}

  /** create: the planned action's steps, stored awaiting the wallet's signatures; `nonce` the hint of the wallet's next nonce */
  async create(treasury: TreasuryRecord, plan: Plan, now: Date, nonce: { nonce: number | null }): Promise<{ envelope: EnvelopeRecord; steps: StepRecord[] }> {
    const { request, fee } = plan;
    const planned = plannedSteps(treasury, plan, this.ctx.config.feeRecipient);
    const stepIds = planned.map(() => newId("tx"));
    // the envelope's own id: relaying the one unsigned_transaction under it is the one-signature path (relay-service.ts)
    const envelopeTxId = newId("tx");
    const params = { ...(request.params as Record<string, unknown>), ...(nonce.nonce !== null ? { nonce_base: nonce.nonce } : {}), ltv_before: plan.ltvBefore };
    const envelope: EnvelopeRecord = {
      txId: envelopeTxId,
      treasuryId: treasury.id,
      action: request.action,
      amountMicro: request.amountMicro,
      // the fee as it is signed: its amount, rate and basis
      feeMicro: fee.feeMicro,
      feeBps: Number(fee.feeBps),
      feeBasis: fee.basis,
      params,
      chain: treasury.chain,
      chainId: AAVE_MARKETS[treasury.chain].chainId,
      status: "awaiting_signature",
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + ENVELOPE_TTL_MS).toISOString(),
      completedAt: null,
    };
    const steps: StepRecord[] = planned.map((p, i) => ({
      txId: stepIds[i]!,
      envelopeTxId,
      seq: i,
      kind: p.kind,
      to: p.to,
      data: p.data,
      value: p.value,
      summary: p.summary as unknown as Record<string, unknown>,
      status: "awaiting_signature",
      txHash: null,
      signedTransaction: null,
      receipt: null,
      relayedAt: null,
      signer: null,
      txNonce: null,
      broadcastAt: null,
      failedAttempts: [],
    }));
    // the envelope and its event: one transaction (the event log is an outbox: store/event-store.ts)
    await this.ctx.tx.transaction(async () => {
      await this.ctx.stores.envelopes.insert(envelope, steps);
      await this.ctx.stores.events.append(
        treasury.id,
        "envelope.created",
        { envelope_id: envelopeTxId, action: envelope.action, steps: steps.length, expires_at: envelope.expiresAt },
        { now },
      );
    });
    return { envelope, steps };
  }

  /** expire: an envelope past its expiry is refused (and marked so) */
  async refuseExpired(envelope: EnvelopeRecord): Promise<void> {
    const now = this.ctx.clock.now();
    if (envelope.status === "expired" || now.toISOString() >= envelope.expiresAt) {
      if (envelope.status === "awaiting_signature") await this.expire(envelope);
      throw new TreasuryError("envelope_expired", `envelope ${envelope.txId} expired at ${envelope.expiresAt}; request a new one`, {
        expired_at: envelope.expiresAt,
      });
    }
  }

  /** an envelope past its expiry becomes `expired`, its event written once (a relay refused, or the deadline watch: events/envelope-deadlines.ts) */
  async expire(envelope: EnvelopeRecord): Promise<void> {
    await this.ctx.tx.transaction(async () => {
      await this.ctx.stores.envelopes.setStatus(envelope.txId, "expired", null);
      await this.ctx.stores.events.append(
        envelope.treasuryId,
        "envelope.expired",
        { envelope_id: envelope.txId, action: envelope.action, expired_at: envelope.expiresAt },
        { dedupeKey: `envelope.expired:${envelope.txId}`, now: this.ctx.clock.now() },
      );
    });
  }

  /**
   * The deadline watch (run every few seconds by each gateway): `envelope.expiring` for an envelope awaiting
   * signature that expires within EXPIRING_NOTICE_MS, and `envelope.expired` (the envelope marked so) for one past
   * its expiry that no relay came to refuse. Each is written once per envelope (its dedupe key), whichever
   * instance sees it first. Returns how many events it wrote.
   */
  async sweepDeadlines(): Promise<number> {
    const now = this.ctx.clock.now();
    let written = 0;
    const due = await this.ctx.stores.envelopes.awaitingExpiringBefore(new Date(now.getTime() + EXPIRING_NOTICE_MS).toISOString(), 200);
    for (const e of due) {
      try {
        if (e.expiresAt <= now.toISOString()) {
          await this.expire(e);
          written++;
          continue;
        }
        const event = await this.ctx.stores.events.append(
          e.treasuryId,
          "envelope.expiring",
          { envelope_id: e.txId, action: e.action, expires_at: e.expiresAt },
          { dedupeKey: `envelope.expiring:${e.txId}`, now },
        );
        if (event) written++;
      } catch (err) {
        // another instance wrote the same envelope's event at the same moment (its dedupe key's unique index)
        if (!/unique|duplicate/i.test(String((err as Error).message))) throw err;
      }
    }
    return written;
  }

  /** claim: the step becomes `broadcasting` with the transaction's hash and nonce; anything else holding it is refused */
  async claim(txId: string, verified: VerifiedTransaction, signed: `0x${string}`, txNonce: number): Promise<void> {
    const claimed = await this.ctx.stores.envelopes.claimStep(txId, {
      txHash: verified.hash,
      signed,
      signer: verified.signer,
      nonce: txNonce,
      at: this.ctx.clock.now().toISOString(),
    });
    if (claimed) return;
    const fresh = (await this.ctx.stores.envelopes.step(txId))!;
    throw fresh.status === "relayed"
      ? this.alreadyRelayed(fresh)
      : fresh.status === "broadcasting"
        ? this.inFlight(fresh)
        : new TreasuryError("step_out_of_order", "an earlier step of this envelope is not relayed yet");
  }

  /** broadcast: a transaction the node refused without ever knowing it leaves the step awaiting a new signature */
  async broadcast(treasury: TreasuryRecord, txId: string, signed: `0x${string}`, hash: `0x${string}`): Promise<void> {
    try {
      await this.parts.chain.send(treasury.chain, signed);
    } catch (err) {
      if (!(await this.parts.chain.known(treasury.chain, hash).catch(() => true))) {
        await this.ctx.stores.envelopes.unclaimStep(
          txId,
          hash,
          `refused by the node: ${err instanceof TreasuryError ? err.shortMessage : String(err)}`,
          this.ctx.clock.now().toISOString(),
        );
        throw err;
      }
    }
  }

  /** settle: wait up to `timeoutMs` for a claimed step's receipt and record the outcome */
  async settle(txId: string, hash: `0x${string}`, timeoutMs: number): Promise<RelayOutcome> {
    const step = (await this.ctx.stores.envelopes.step(txId))!;
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await this.parts.backing.treasury(envelope.treasuryId);
    const chain = treasury.chain;
    const mined = await this.parts.chain.receipt(chain, hash, timeoutMs);
    if (!mined) return { kind: "broadcasting", result: broadcastingReceipt(this.ctx.links, envelope, txId, hash) };
    if (mined.status !== "success") {
      await this.ctx.tx.transaction(async () => {
        if (!(await this.ctx.stores.envelopes.unclaimStep(txId, hash, "reverted", this.ctx.clock.now().toISOString()))) return;
        await this.ctx.stores.events.append(
          envelope.treasuryId,
          "relay.failed",
          { envelope_id: envelope.txId, step: step.seq, tx_hash: hash, reason: "reverted" },
          { now: this.ctx.clock.now() },
        );
      });
      throw new TreasuryError(
        "transaction_reverted",
        `transaction ${hash} was mined but reverted on ${chain}; nothing was recorded. Sign the step again with the wallet's next nonce`,
        { tx_hash: hash },
      );
    }
    if (envelope.params.one_signature === true && step.kind === "pool_call") await this.parts.sandboxSteps.provideTrailing(envelope, step, treasury);
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const last = steps.every((s) => s.txId === txId || s.status === "relayed");
    const chainAfter = last ? await this.parts.chain.position(chain, treasury.walletAddress) : null;
    let won = false;
    const receipt = await this.ctx.tx.transaction(async () => {
      won = false;
      const fresh = (await this.ctx.stores.envelopes.step(txId))!;
      if (fresh.status === "relayed") {
        // settled meanwhile by a concurrent reconciliation of the same transaction: the same receipt
        if (fresh.txHash === hash && fresh.receipt) return fresh.receipt;
        throw this.alreadyRelayed(fresh);
      }
      const at = this.ctx.clock.now();
      const current = await this.parts.backing.treasury(envelope.treasuryId);
      const execution = last && chainAfter ? await this.recordMined(current, envelope, chainAfter, at) : undefined;
      const answer = relayReceipt(envelope, step, {
        oneSignature: envelope.params.one_signature === true,
        steps,
        txHash: hash,
        simulated: false,
        block: { number: Number(mined.blockNumber), gasUsed: Number(mined.gasUsed) },
        resultingLtv: chainAfter ? ltvPct(chainAfter) : ltvPct(positionOf(current.holdings)),
        last,
        execution,
        signer: fresh.signer!,
        at,
      });
      if (!(await this.ctx.stores.envelopes.finishStep(txId, hash, answer, at.toISOString())))
        throw this.alreadyRelayed((await this.ctx.stores.envelopes.step(txId))!);
      if (last) await this.ctx.stores.envelopes.setStatus(envelope.txId, "relayed", at.toISOString());
      await this.relayed(envelope, step, hash, execution, at);
      won = true;
      return answer;
    });
    // the wallet swapped for real: the output the sandbox delivered ahead goes back to the pool (by the one settlement that recorded the step)
    if (won && step.kind === "swap") await this.parts.sandboxSteps.takeBack(chain, envelope, step);
    return { kind: "relayed", result: receipt };
  }

  /** reconcile: a `broadcasting` step against the chain (called by a relay or a read of the step, and by reads of its treasury) */
  async reconcile(step: StepRecord): Promise<void> {
    if (step.status !== "broadcasting" || !step.txHash || !step.signedTransaction) return;
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await this.parts.backing.treasury(envelope.treasuryId);
    if (!this.parts.backing.chainBacked(treasury)) return;
    const chain = treasury.chain;
    const hash = step.txHash as `0x${string}`;
    if (await this.parts.chain.receipt(chain, hash, 0)) {
      await this.settle(step.txId, hash, 0).catch(() => undefined);
      return;
    }
    if (await this.parts.chain.known(chain, hash)) return; // pending
    const used = await this.parts.chain.minedNonce(chain, step.signer as `0x${string}`);
    if (step.txNonce !== null && used > step.txNonce) {
      await this.ctx.stores.envelopes.unclaimStep(
        step.txId,
        hash,
        `dropped: nonce ${step.txNonce} was used by another transaction`,
        this.ctx.clock.now().toISOString(),
      );
      return;
    }
    await this.parts.chain.send(chain, step.signedTransaction as `0x${string}`).catch(() => undefined);
  }

  /**
   * record, for a simulated treasury (no chain behind it): the step checked and
   * recorded in one transaction, the action applied to the sandbox ledger at the
   * last step; `one`: the other steps provided in simulation with the main call.
   */
  async recordSimulated(txId: string, signed: `0x${string}`, verified: VerifiedTransaction, one?: { provide: StepRecord[] }): Promise<Record<string, unknown>> {
    return await this.ctx.tx.transaction(async () => {
      const step = (await this.ctx.stores.envelopes.step(txId))!;
      if (step.status === "relayed") throw this.alreadyRelayed(step);
      const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
      const at = this.ctx.clock.now();
      for (const s of one?.provide ?? []) {
        if (!(await this.ctx.stores.envelopes.provideStep(s.txId, simulatedProvision(s), at.toISOString())))
          throw new TreasuryError("step_in_flight", `step ${s.seq} (${s.kind}) of ${envelope.txId} was relayed meanwhile; retry`);
      }
      const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
      const last = steps.every((s) => s.txId === txId || s.status === "relayed");
      const current = await this.parts.backing.treasury(envelope.treasuryId);
      let resultLtv = ltvPct(positionOf(current.holdings));
      let execution: Record<string, unknown> | undefined;
      if (last) {
        // the fee as signed in the envelope, not today's tier
        const plan = await this.parts.planner.plan(
          current,
          { action: envelope.action, amountMicro: envelope.amountMicro, params: envelope.params as never },
          null,
          envelopeFee(envelope),
        );
        execution = await this.parts.recorder.recordAction(
          current,
          plan,
          { origin: "relay", envelopeTxId: envelope.txId, trigger: "relayed_signature", settled: false },
          at,
        );
        resultLtv = plan.ltvAfter;
      }
      const receipt = relayReceipt(envelope, step, {
        oneSignature: one !== undefined,
        steps,
        txHash: verified.hash,
        simulated: true,
        resultingLtv: resultLtv,
        last,
        execution,
        signer: verified.signer,
        at,
      });
      if (!(await this.ctx.stores.envelopes.markStepRelayed(txId, verified.hash, signed, receipt, at.toISOString())))
        throw this.alreadyRelayed((await this.ctx.stores.envelopes.step(txId))!);
      if (last) await this.ctx.stores.envelopes.setStatus(envelope.txId, "relayed", at.toISOString());
      await this.relayed(envelope, step, verified.hash, execution, at);
      return receipt;
    });
  }

  /** the event of a step recorded relayed (inside the transaction that records it) */
  private async relayed(envelope: EnvelopeRecord, step: StepRecord, hash: string, execution: Record<string, unknown> | undefined, at: Date): Promise<void> {
    // the action's receipt names its execution under its declaration's receipt id (deposit_id, borrow_id…)
    const id = execution?.[declarationOf(envelope.action).receiptId];
    const executionId = typeof id === "string" ? id : null;
    await this.ctx.stores.events.append(
      envelope.treasuryId,
      "relay.confirmed",
      { envelope_id: envelope.txId, step: step.seq, tx_hash: hash, execution_id: executionId },
      { now: at },
    );
  }

  /**
   * record, for an envelope whose transactions were broadcast and mined: the
   * chain already holds the result, so no rail and no sandbox ledger, only the
   * execution and the fee audit with the envelope's own fee and the figures
   * read back from the chain.
   */
  private recordMined(treasury: TreasuryRecord, envelope: EnvelopeRecord, after: ChainPosition, now: Date): Promise<Record<string, unknown>> {
    const plan: Plan = {
      request: { action: envelope.action, amountMicro: envelope.amountMicro, params: envelope.params as ActionParams },
      fee: envelopeFee(envelope),
      ledger: null,
      ltvBefore: typeof envelope.params.ltv_before === "number" ? envelope.params.ltv_before : 0,
      ltvAfter: ltvPct(after),
      healthAfter: chainHealthScore(after),
      debtAfterMicro: after.debtMicro,
    };
    return this.parts.recorder.recordAction(treasury, plan, { origin: "relay", envelopeTxId: envelope.txId, trigger: "relayed_signature", settled: true }, now);
  }

  alreadyRelayed(step: StepRecord): TreasuryError {
    return new TreasuryError("already_relayed", `${step.txId} was already relayed as ${step.txHash}`, { tx_hash: step.txHash, receipt: step.receipt });
  }

  inFlight(step: StepRecord): TreasuryError {
    return new TreasuryError(
      "step_in_flight",
      `${step.txId} is being broadcast as ${step.txHash}; no other signature of it is sent. Poll GET /api/v1/relay/${step.txId}`,
      {
        tx_hash: step.txHash,
        status_url: this.ctx.links.url(`/api/v1/relay/${step.txId}`),
      },
    );
  }
}
