/**
 * Relay (spec 2.6, 3.2, 4.8): accepts a signed transaction for one step of an
 * envelope only if it is exactly what the envelope asked for, signed by the
 * treasury's wallet. This file decides whether a signed transaction may enter
 * the envelope's life; the life itself (claim, broadcast, settle, reconcile,
 * record) is envelopes/lifecycle.ts. A chain-backed treasury's step is claimed
 * durably before it is broadcast; a sandbox treasury's is simulated
 * (`simulated: true`, tx_hash is the hash of the signed transaction). The
 * action is recorded when the envelope's last step is relayed. Answers are
 * outcomes with a kind (lifecycle.ts `RelayOutcome`), never HTTP statuses.
 */
import { createHash } from "node:crypto";
import { parseTransaction, type TransactionSerialized } from "viem";
import { recoverTransactionSigner } from "../lib/recover-signer";
import { verifySignedTransaction } from "../chain/signed-transaction";
import type { ChainGateway } from "../chain/chain-gateway";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { EnvelopeRecord } from "../store/envelope-store";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import type { TreasuryBacking } from "./execution/backing";
import type { EnvelopeLifecycle, RelayOutcome } from "./envelopes/lifecycle";
import type { SandboxSteps } from "./envelopes/sandbox-steps";
import { mainStep, relayStatusView } from "./envelopes/view";

export type { RelayOutcome } from "./envelopes/lifecycle";

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

export interface RelayParts {
  backing: TreasuryBacking;
  envelopes: EnvelopeLifecycle;
  sandboxSteps: SandboxSteps;
  chain: ChainGateway;
}

export class RelayService {
  constructor(
    private readonly ctx: ServiceContext<"envelopes">,
    private readonly parts: RelayParts,
  ) {}

  /** a relay under this tx_id changes nothing but the store: its treasury is simulated (no chain behind it) */
  async storeOnly(txId: string): Promise<boolean> {
    const envelope = await this.ctx.stores.envelopes.get((await this.ctx.stores.envelopes.step(txId))?.envelopeTxId ?? txId);
    return envelope !== undefined && !this.parts.backing.chainBacked(await this.parts.backing.treasury(envelope.treasuryId));
  }

  /**
   * Relay one signed step. Sandbox treasuries (no RPC): checked and recorded
   * in one transaction. Chain-backed ones, in this order:
   *   1. checks: the step awaits a signature, earlier steps are relayed, the
   *      envelope has not expired, the transaction is exactly the step's and
   *      signed by the treasury's wallet, its nonce is the wallet's next one,
   *      and it does not revert in simulation;
   *   2. claim, broadcast and settle (envelopes/lifecycle.ts): mined ->
   *      recorded (the action at the last step); reverted or refused by the
   *      node -> the step awaits a new signature; no receipt in time ->
   *      `broadcasting`, reconciled by the next relay of the step, GET
   *      /api/v1/relay/{tx_id} or a read of the treasury.
   */
  async relay(txId: string, signed: `0x${string}`): Promise<RelayOutcome> {
    const { envelopes, backing, chain } = this.parts;
    let step = await this.ctx.stores.envelopes.step(txId);
    if (!step) {
      const envelope = await this.ctx.stores.envelopes.get(txId);
      if (!envelope) throw new TreasuryError("envelope_not_found", `no unsigned transaction ${txId}`);
      return this.relayEnvelope(envelope, signed);
    }
    const envelope = (await this.ctx.stores.envelopes.get(step.envelopeTxId))!;
    const treasury = await backing.treasury(envelope.treasuryId);
    if (step.status === "broadcasting") {
      await envelopes.reconcile(step);
      step = (await this.ctx.stores.envelopes.step(txId))!;
      if (step.status === "broadcasting") throw envelopes.inFlight(step);
    }
    if (step.status === "relayed") {
      // the same signed transaction again (a client retrying after a crash or a lost answer): its receipt
      if (step.signedTransaction?.toLowerCase() === signed.toLowerCase() && step.receipt) return { kind: "replayed", result: step.receipt };
      throw envelopes.alreadyRelayed(step);
    }
    await envelopes.refuseExpired(envelope);
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const next = steps.find((s) => s.status !== "relayed");
    if (next && next.txId !== txId) {
      throw new TreasuryError(
        "step_out_of_order",
        `relay step ${next.seq} (${next.kind}, ${next.txId}) first${next.status === "broadcasting" ? "; it is being broadcast" : ""}`,
        { next_tx_id: next.txId },
      );
    }
    const verified = await verifySignedTransaction(signed, {
      to: step.to,
      data: step.data,
      value: step.value,
      chainId: envelope.chainId,
      signer: treasury.walletAddress,
    });
    if (!backing.chainBacked(treasury)) return { kind: "relayed", result: await envelopes.recordSimulated(txId, signed, verified) };
    // the wallet's own signature, just checked, proves the key of a registration that proved nothing else: funded now (sandbox only)
    await this.fundOnSignature(treasury, envelope);

    const txNonce = parseTransaction(signed as TransactionSerialized).nonce ?? 0;
    // the nonce and the simulation are asked of the node together; the nonce's refusal comes first
    const [expectedNonce, simulated] = await Promise.all([
      chain.pendingNonce(treasury.chain, verified.signer),
      chain.simulate(treasury.chain, { from: verified.signer, to: step.to, data: step.data, value: BigInt(step.value) }).then(
        () => undefined,
        (err: unknown) => ({ err }),
      ),
    ]);
    if (txNonce !== expectedNonce) throw nonceNotNext(txNonce, expectedNonce, verified.signer, treasury.chain);
    if (simulated) throw simulated.err;
    await envelopes.claim(txId, verified, signed, txNonce);
    await envelopes.broadcast(treasury, txId, signed, verified.hash);
    return envelopes.settle(txId, verified.hash, this.ctx.config.relayReceiptTimeoutMs);
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
   *   - elsewhere: refused, prerequisite_steps_required naming them.
   */
  private async relayEnvelope(envelope: EnvelopeRecord, signed: `0x${string}`): Promise<RelayOutcome> {
    const { envelopes, backing, chain } = this.parts;
    const steps = await this.ctx.stores.envelopes.steps(envelope.txId);
    const main = mainStep(steps);
    if (main.status !== "awaiting_signature") return this.relay(main.txId, signed);
    const others = steps.filter((s) => s.txId !== main.txId && s.status !== "relayed");
    if (others.length === 0) return this.relay(main.txId, signed);
    await envelopes.refuseExpired(envelope);
    const inFlight = others.find((s) => s.status === "broadcasting");
    if (inFlight) throw envelopes.inFlight(inFlight);
    const treasury = await backing.treasury(envelope.treasuryId);
    const verified = await verifySignedTransaction(signed, {
      to: main.to,
      data: main.data,
      value: main.value,
      chainId: envelope.chainId,
      signer: treasury.walletAddress,
    });
    if (!backing.chainBacked(treasury)) return { kind: "relayed", result: await envelopes.recordSimulated(main.txId, signed, verified, { provide: others }) };
    // the sandbox provides approvals, transfers and swaps, never another Aave call: an envelope of several (an exit) is relayed step by step
    // the sandbox provides for a proven wallet, and for one whose signature of this call was just checked (fundable on signature)
    const proven = await backing.sandboxed(treasury);
    if (!(proven || (await backing.fundableOnSignature(treasury))) || others.some((s) => s.kind === "pool_call")) {
      throw new TreasuryError(
        "prerequisite_steps_required",
        `this envelope needs ${others.length} more signed step(s) besides its unsigned_transaction on ${treasury.chain}: relay each step of \`steps\` in seq order under its own tx_id (${others.map((s) => `${s.seq} ${s.kind}`).join(", ")})`,
        {
          prerequisite_steps: others.map((s) => ({
            tx_id: s.txId,
            seq: s.seq,
            kind: s.kind,
            to: s.to,
            data: s.data,
            value: s.value,
            description: (s.summary as { description?: string }).description ?? null,
          })),
        },
      );
    }
    const txNonce = parseTransaction(signed as TransactionSerialized).nonce ?? 0;
    const expectedNonce = await chain.pendingNonce(treasury.chain, verified.signer);
    if (txNonce !== expectedNonce) throw nonceNotNext(txNonce, expectedNonce, verified.signer, treasury.chain);
    if (proven) await backing.fundForAction(treasury, envelope);
    else await this.fundOnSignature(treasury, envelope);
    // the prerequisites claimed and the envelope flagged in one transaction, before any storage write
    await this.parts.sandboxSteps.provideBefore(
      treasury,
      envelope,
      others.filter((s) => s.seq < main.seq),
    );
    return this.relay(main.txId, signed);
  }

  /**
   * A registration fundable on signature (execution/backing.ts) whose wallet's signature of one of this envelope's
   * transactions was just checked: gas and the action's USDC added on top of what the wallet holds, once per
   * envelope (claimed in the store before the chain is touched, released if the funding fails).
   */
  private async fundOnSignature(treasury: TreasuryRecord, envelope: EnvelopeRecord): Promise<void> {
    const { backing } = this.parts;
    if (!(await backing.fundableOnSignature(treasury))) return;
    const envelopes = this.ctx.stores.envelopes;
    const claimed = await this.ctx.tx.transaction(async () => {
      const fresh = (await envelopes.get(envelope.txId))!;
      if (fresh.params.funded_on_signature === true) return false;
      await envelopes.setParams(envelope.txId, { ...fresh.params, funded_on_signature: true });
      return true;
    });
    if (!claimed) return;
    try {
      await backing.fundOnSignature(treasury, envelope);
    } catch (err) {
      const fresh = (await envelopes.get(envelope.txId))!;
      await envelopes.setParams(envelope.txId, { ...fresh.params, funded_on_signature: false });
      throw err;
    }
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
      await this.parts.envelopes.reconcile(step);
      step = (await this.ctx.stores.envelopes.step(txId))!;
    }
    return relayStatusView((await this.ctx.stores.envelopes.get(step.envelopeTxId))!, step);
  }

  /** reconcile every broadcasting step of a treasury with the chain (called by reads of the treasury) */
  async reconcileTreasury(treasuryId: string): Promise<void> {
    for (const step of await this.ctx.stores.envelopes.broadcastingFor(treasuryId)) await this.parts.envelopes.reconcile(step).catch(() => undefined);
  }
}

function nonceNotNext(received: number, expected: number, signer: string, chain: string): TreasuryError {
  return new TreasuryError(
    "nonce_not_next",
    `the transaction's nonce is ${received}; ${signer}'s next nonce on ${chain} is ${expected}. Sign it with nonce ${expected}`,
    {
      expected_nonce: expected,
      received_nonce: received,
    },
  );
}
