/**
 * The receipts a relay answers (spec 2.6), built from an envelope's records and the figures of the step
 * that was recorded; no store, no chain. The record (envelopes/lifecycle.ts) writes them with the step:
 *
 *   relay receipt        a step recorded (`relayed`), with the action's execution receipt at the last step
 *   broadcasting receipt a step sent and not mined in time: it stays claimed, reconciled later
 *   simulated provision  a step of a simulated treasury's one-signature relay, applied with the action
 */
import { usdcToNumber } from "@treasury/core/domain/money";
import type { EnvelopeRecord, StepRecord } from "../../store/envelope-store";
import type { Links } from "../context";

/** the figures of one relayed step that its receipt reports */
export interface RelayedStep {
  oneSignature: boolean;
  /** the envelope's steps as read before the step was recorded: the ones provided and the ones remaining are counted from them */
  steps: StepRecord[];
  txHash: string;
  simulated: boolean;
  block?: { number: number; gasUsed: number };
  resultingLtv: number;
  last: boolean;
  execution?: Record<string, unknown>;
  signer: string;
  at: Date;
}

/** spec 2.6: the relay receipt of one step, with the action's receipt when it was the last */
export function relayReceipt(envelope: EnvelopeRecord, step: StepRecord, r: RelayedStep): Record<string, unknown> {
  // the other steps provided without a signature (no hash, a receipt), and those not relayed yet
  const provided = r.steps.filter((s) => s.txId !== step.txId && s.txHash === null && s.receipt);
  const remaining = r.steps.filter((s) => s.status !== "relayed" && s.txId !== step.txId).length;
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
      remaining_steps: remaining,
      ...(r.execution ? { receipt: r.execution } : {}),
    },
    ...(provided.length > 0 ? { provided_steps: provided.map((s) => s.receipt) } : {}),
    ...(r.oneSignature ? { step_tx_id: step.txId } : {}),
    envelope_tx_id: envelope.txId,
    signer: r.signer,
    relayed_at: r.at.toISOString(),
  };
}

/** a step sent and not mined in time: it stays claimed, reconciled later */
export function broadcastingReceipt(links: Links, envelope: EnvelopeRecord, txId: string, hash: string): Record<string, unknown> {
  return {
    sandbox: true,
    object: "relay_receipt",
    tx_id: txId,
    tx_hash: hash,
    simulated: false,
    chain: envelope.chain,
    chain_id: envelope.chainId,
    status: "broadcasting",
    status_url: links.url(`/api/v1/relay/${txId}`),
    message:
      "the transaction was sent and is not mined yet; its step stays claimed (no other signature of it will be sent). Poll status_url or relay the same step again.",
    envelope_tx_id: envelope.txId,
  };
}

/** a step of a simulated treasury's one-signature relay, provided without a signature: applied with the action to the sandbox ledger */
export function simulatedProvision(s: StepRecord): Record<string, unknown> {
  return {
    object: "provided_step",
    provided_by: "sandbox",
    method: "simulation",
    effect: `${s.kind} applied with the action to the sandbox ledger`,
    tx_id: s.txId,
    seq: s.seq,
    kind: s.kind,
  };
}
