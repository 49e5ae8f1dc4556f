/**
 * Relay (spec 2.6, 3.2, 4.8): accepts a signed transaction for one step of an
 * envelope only if it is exactly what the envelope asked for, signed by the
 * treasury's wallet. Execution is simulated in this build (`simulated: true`):
 * the receipt's tx_hash is the hash of the signed transaction, and the
 * action reaches the ledger when the envelope's last step is relayed.
 */
import { keccak256, parseTransaction, recoverTransactionAddress, type TransactionSerialized } from "viem";
import { usdcToNumber } from "../domain/money";
import { positionOf } from "../domain/portfolio";
import { ltvPct } from "../domain/position";
import { ApiError } from "../http/errors";
import type { StepRecord } from "../store/envelope-store";
import type { ChainPosition } from "../chain/chain-gateway";
import type { ActionService } from "./action-service";
import type { AppContext } from "./context";

export interface VerifiedTransaction {
  signer: `0x${string}`;
  hash: `0x${string}`;
}

/** Parse and check a signed transaction against a step. Each mismatch has its own code. */
export async function verifySignedTransaction(
  signed: `0x${string}`,
  expected: { to: string; data: string; value: string; chainId: number; signer: string },
): Promise<VerifiedTransaction> {
  let parsed: ReturnType<typeof parseTransaction>;
  let signer: `0x${string}`;
  try {
    parsed = parseTransaction(signed as TransactionSerialized);
    signer = await recoverTransactionAddress({ serializedTransaction: signed as TransactionSerialized });
  } catch (err) {
    const reason = err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message).split("\n")[0] : String(err);
    throw new ApiError(400, "invalid_signed_transaction", `signed_transaction is not a signed legacy, EIP-2930 or EIP-1559 transaction: ${reason}`);
  }
  if (!["legacy", "eip2930", "eip1559"].includes(parsed.type ?? "")) {
    throw new ApiError(400, "invalid_signed_transaction", `transaction type ${parsed.type} is not accepted; use legacy, EIP-2930 or EIP-1559`);
  }
  const mismatch = (code: string, field: string, got: unknown, want: unknown) =>
    new ApiError(400, code, `${field} of the signed transaction (${String(got)}) does not match the envelope (${String(want)})`, { field, expected: want, received: got });
  if (parsed.chainId !== expected.chainId) throw mismatch("chain_id_mismatch", "chain id", parsed.chainId ?? "none (pre-EIP-155)", expected.chainId);
  if ((parsed.to ?? "").toLowerCase() !== expected.to.toLowerCase()) throw mismatch("to_mismatch", "to", parsed.to ?? "none", expected.to);
  if ((parsed.data ?? "0x").toLowerCase() !== expected.data.toLowerCase()) throw mismatch("data_mismatch", "data", `${(parsed.data ?? "0x").slice(0, 18)}...`, `${expected.data.slice(0, 18)}...`);
  if ((parsed.value ?? 0n) !== BigInt(expected.value)) throw mismatch("value_mismatch", "value", (parsed.value ?? 0n).toString(), expected.value);
  if (signer.toLowerCase() !== expected.signer.toLowerCase()) throw mismatch("signer_mismatch", "signer", signer, expected.signer);
  return { signer, hash: keccak256(signed) };
}

export class RelayService {
  constructor(
    private readonly ctx: AppContext,
    private readonly actions: ActionService,
  ) {}

  async relay(txId: string, signed: `0x${string}`): Promise<Record<string, unknown>> {
    const step = this.ctx.stores.envelopes.step(txId);
    if (!step) throw new ApiError(404, "envelope_not_found", `no unsigned transaction ${txId}`);
    const envelope = this.ctx.stores.envelopes.get(step.envelopeTxId)!;
    if (step.status === "relayed") throw this.alreadyRelayed(step);
    const now = this.ctx.clock.now();
    if (envelope.status === "expired" || now.toISOString() >= envelope.expiresAt) {
      if (envelope.status === "awaiting_signature") this.ctx.stores.envelopes.setStatus(envelope.txId, "expired", null);
      throw new ApiError(410, "envelope_expired", `envelope ${envelope.txId} expired at ${envelope.expiresAt}; request a new one`, { expired_at: envelope.expiresAt });
    }
    const steps = this.ctx.stores.envelopes.steps(envelope.txId);
    const next = steps.find((s) => s.status === "awaiting_signature");
    if (next && next.txId !== txId) {
      throw new ApiError(409, "step_out_of_order", `relay step ${next.seq} (${next.kind}, ${next.txId}) first`, { next_tx_id: next.txId });
    }
    const treasury = this.actions.treasury(envelope.treasuryId);
    const verified = await verifySignedTransaction(signed, {
      to: step.to,
      data: step.data,
      value: step.value,
      chainId: envelope.chainId,
      signer: treasury.walletAddress,
    });

    // with an RPC for the treasury's chain: simulate, broadcast, wait for the receipt; a revert changes nothing
    let broadcast: { hash: `0x${string}`; blockNumber: bigint; gasUsed: bigint } | null = null;
    let chainAfter: ChainPosition | null = null;
    if (this.actions.chainBacked(treasury)) {
      const chain = treasury.chain;
      await this.actions.chain.simulate(chain, { from: verified.signer, to: step.to, data: step.data, value: BigInt(step.value) });
      const mined = await this.actions.chain.broadcast(chain, signed);
      if (mined.status !== "success") {
        throw new ApiError(422, "transaction_reverted", `transaction ${mined.hash} was mined but reverted on ${chain}; nothing was recorded`, { tx_hash: mined.hash });
      }
      broadcast = mined;
      const isLast = steps.every((s) => s.txId === txId || s.status === "relayed");
      if (isLast) chainAfter = await this.actions.chain.position(chain, treasury.walletAddress);
    }

    return this.ctx.db.transaction(() => {
      // re-read inside the (synchronous) transaction: a concurrent relay of the same step may have won
      const fresh = this.ctx.stores.envelopes.step(txId)!;
      if (fresh.status === "relayed") throw this.alreadyRelayed(fresh);
      const at = this.ctx.clock.now();
      const last = steps.every((s) => s.txId === txId || s.status === "relayed");
      const current = this.actions.treasury(envelope.treasuryId);
      let resultLtv = chainAfter ? ltvPct(chainAfter) : ltvPct(positionOf(current.holdings));
      let execution: Record<string, unknown> | undefined;
      if (last && chainAfter) {
        execution = this.actions.recordChainExecution(current, envelope, chainAfter, at);
      } else if (last && !broadcast) {
        const plan = this.actions.plan(current, {
          action: envelope.action,
          amountMicro: envelope.amountMicro,
          params: envelope.params as never,
        });
        execution = this.actions.execute(current, plan, { origin: "relay", envelopeTxId: envelope.txId, trigger: "relayed_signature" }, at);
        resultLtv = plan.ltvAfter;
      }
      const remaining = steps.filter((s) => s.status === "awaiting_signature" && s.txId !== txId).length;
      const receipt = {
        sandbox: true,
        object: "relay_receipt",
        tx_id: txId,
        tx_hash: broadcast ? broadcast.hash : verified.hash,
        simulated: !broadcast,
        ...(broadcast ? { block_number: Number(broadcast.blockNumber), gas_used: Number(broadcast.gasUsed) } : {}),
        chain: envelope.chain,
        chain_id: envelope.chainId,
        status: "confirmed",
        result: {
          action: envelope.action,
          amount_usdc: usdcToNumber(envelope.amountMicro),
          resulting_ltv: resultLtv,
          step: step.kind,
          sequence_complete: last,
          remaining_steps: remaining,
          ...(execution ? { receipt: execution } : {}),
        },
        envelope_tx_id: envelope.txId,
        signer: verified.signer,
        relayed_at: at.toISOString(),
      };
      if (!this.ctx.stores.envelopes.markStepRelayed(txId, broadcast ? broadcast.hash : verified.hash, signed, receipt, at.toISOString())) {
        // another request relayed it between our read and this write: roll back, report the first
        throw this.alreadyRelayed(this.ctx.stores.envelopes.step(txId)!);
      }
      if (last) this.ctx.stores.envelopes.setStatus(envelope.txId, "relayed", at.toISOString());
      return receipt;
    })();
  }

  private alreadyRelayed(step: StepRecord): ApiError {
    return new ApiError(409, "already_relayed", `${step.txId} was already relayed as ${step.txHash}`, { tx_hash: step.txHash, receipt: step.receipt });
  }
}
