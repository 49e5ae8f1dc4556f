/**
 * What an envelope shows, built from its records and nothing else: the
 * unsigned envelope (spec 2.5, plus the ordered steps, chain id and decoded
 * summaries) and the state of a step's relay. No store, no chain. The receipts
 * a relay answers are written by the record (envelopes/lifecycle.ts).
 */
import { usdcToNumber } from "@treasury/core/domain/money";
import type { EnvelopeRecord, StepRecord } from "../../store/envelope-store";
import type { Links } from "../context";
import type { Plan } from "../execution/planner";

/** the step that is the action's own Aave Pool call: what the envelope's unsigned_transaction holds */
export function mainStep(steps: StepRecord[]): StepRecord {
  return steps.find((s) => s.kind === "pool_call")!;
}

/** spec 2.5, plus the ordered steps, chain id and decoded summaries */
export function envelopeView(links: Links, envelope: EnvelopeRecord, steps: StepRecord[], plan?: Plan, nonceSource?: string): Record<string, unknown> {
  const main = mainStep(steps);
  const base = typeof envelope.params.nonce_base === "number" ? envelope.params.nonce_base : null;
  const tx = (s: StepRecord, nonce = base === null ? null : base + s.seq) => ({
    chain: envelope.chain,
    chain_id: envelope.chainId,
    to: s.to,
    data: s.data,
    value: s.value,
    nonce,
  });
  return {
    sandbox: true,
    object: "unsigned_transaction",
    tx_id: envelope.txId,
    treasury_id: envelope.treasuryId,
    action: envelope.action,
    amount_usdc: usdcToNumber(envelope.amountMicro),
    fee_usdc: usdcToNumber(envelope.feeMicro),
    ...(plan ? { ltv_before: plan.ltvBefore, ltv_after: plan.ltvAfter } : {}),
    status: envelope.status,
    // signed alone (one signature), it is the wallet's next transaction
    unsigned_transaction: { ...tx(main, base), summary: main.summary },
    expires_at: envelope.expiresAt,
    created_at: envelope.createdAt,
    steps: steps.map((s) => ({ tx_id: s.txId, seq: s.seq, kind: s.kind, status: s.status, unsigned_transaction: tx(s), summary: s.summary })),
    relay: {
      url: links.url("/api/v1/relay"),
      order: "relay every step in seq order, each with its own tx_id and a fresh Idempotency-Key; the action executes when the last step is relayed",
      one_signature:
        "or sign only unsigned_transaction with the wallet's next nonce and relay it under this envelope's tx_id: in the sandbox (a local test chain) the other steps are provided without a signature (the fee moved from the wallet to the fee recipient); elsewhere the relay answers 409 prerequisite_steps_required naming them",
      nonce:
        base === null
          ? `fill the wallet's next nonces in step order (no hint: ${nonceSource ?? "unknown"})`
          : `hints from ${nonceSource ?? "the chain"}: the pending count plus the step's seq`,
    },
  };
}

/** GET /api/v1/relay/{tx_id} */
export function relayStatusView(envelope: EnvelopeRecord, step: StepRecord): Record<string, unknown> {
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
