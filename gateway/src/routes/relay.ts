/**
 * The relay of a wallet's signed transactions (spec 4.8): one step of an envelope (or its one
 * unsigned_transaction under the envelope's tx_id) relayed, and the state of a step's relay. No credential:
 * the transaction's own signature is checked against the envelope (services/relay-service.ts).
 */
import type { ErrorCode } from "@treasury/core/lib/errors";
import { RelayPending, RelayReceipt, RelayRequest, RelayStatus, RelayStepParams } from "../schemas/actions";
import { relayScope, type RelayOutcome, type RelayService } from "../services/relay-service";
import { err, RATE_LIMITED, type RouteKit } from "./kit";

/** what a relay came to, as HTTP: recorded or the same transaction again 200, sent and not mined yet 202 */
const RELAY_STATUS = { relayed: 200, replayed: 200, broadcasting: 202 } as const satisfies Record<RelayOutcome["kind"], number>;

/**
 * What the relay refuses a signed transaction with (services/relay-service.ts, services/envelopes/,
 * chain/signed-transaction.ts): a transaction that is not the step's or not the wallet's, an unknown or
 * expired envelope, a step relayed, in flight or out of order, a nonce that is not the wallet's next, the
 * one signature outside the sandbox, a revert (simulated, or mined; Aave's refusal of a borrow and a call that would
 * leave the position liquidatable typed) or a node's refusal, a chain that did not answer.
 */
const RELAY_ERRORS: readonly ErrorCode[] = [
  "invalid_signed_transaction",
  "chain_id_mismatch",
  "to_mismatch",
  "data_mismatch",
  "value_mismatch",
  "signer_mismatch",
  "envelope_not_found",
  "envelope_expired",
  "already_relayed",
  "nonce_not_next",
  "step_in_flight",
  "step_out_of_order",
  "prerequisite_steps_required",
  "transaction_would_revert",
  "borrow_refused",
  "would_be_liquidatable",
  "transaction_reverted",
  "broadcast_rejected",
  "chain_unavailable",
];

export function relayRoutes(kit: RouteKit, relay: RelayService): void {
  kit.route({
    method: "post",
    path: "/api/v1/relay",
    operationId: "relayTransaction",
    tool: {
      name: "relay_signed_transaction",
      title: "Relay a signed transaction",
      description:
        "Relay one signed step of an envelope (legacy, EIP-2930 or EIP-1559). Accepted only if the treasury's wallet signed exactly the step's to, data, value and chain id; steps go in order.",
      openWorld: true,
    },
    summary: "Relay a signed transaction: the envelope's unsigned_transaction under its tx_id, or one step of it",
    description:
      "One signature: sign the envelope's `unsigned_transaction` with the wallet's next nonce and relay it under the envelope's `tx_id`. In the sandbox (a local test chain) the envelope's other steps are provided without a signature (fee moved from the wallet to the fee recipient, approvals set, a swap filled at its quoted minimum) and listed in `provided_steps`; elsewhere 409 `prerequisite_steps_required` names them. Steps: accepted only if it is signed by the treasury's wallet and its to, data, value and chain id equal the step's. Steps are relayed in order; the action executes when the last one is relayed. For a chain-backed treasury the transaction's nonce must be the wallet's next one, the step is claimed (hash recorded) before it is broadcast, and a second signature of a claimed step is refused without being sent; a receipt that does not come in time answers 202 `broadcasting` (poll GET /api/v1/relay/{tx_id}, or relay the same bytes again). The same signed transaction relayed again, under any Idempotency-Key (a retry after a lost answer or a gateway crash), answers the step's receipt once it is mined, never a second execution. Sandbox treasuries are simulated. Idempotency-Keys are scoped to the transaction's signer, so callers cannot collide.",
    tags: ["Wallet loop"],
    idempotencyKey: true,
    request: {
      body: RelayRequest,
      examples: {
        unknown_envelope: {
          summary:
            "a signed EIP-1559 transaction relayed under a tx_id no envelope has: 404 envelope_not_found (relay under the tx_id of an action's envelope)",
          value: {
            tx_id: "tx_00000000000000000000000000000000",
            signed_transaction:
              "0x02f86d83014a3480830f42408477359400830186a094036cbd53842c5426634e7929541ec2318f3dcf7e8080c001a06e08985d77f643c61fa80d539974ffe92b71cdfb8dcbf19ed6950c69cfae9d10a078981afe442c0fa832e1a3ebcc9c209601e66ecdef099dc9764e06488a818e76",
          },
          answers: { status: 404, error: "envelope_not_found" },
        },
      },
    },
    responses: {
      200: { description: "relay receipt (spec 2.6); also the answer to the same signed transaction relayed again", schema: RelayReceipt },
      202: { description: "sent, not mined yet: the step is claimed and reconciled later", schema: RelayPending },
      400: err(
        "invalid body or a signed transaction that does not match (signer_mismatch, to_mismatch, data_mismatch, value_mismatch, chain_id_mismatch, invalid_signed_transaction)",
      ),
      404: err("unknown tx_id"),
      409: err(
        "already_relayed: another signature of a relayed step (carries the first tx_hash); step_in_flight (another signature of the step is being broadcast), step_out_of_order, nonce_not_next (carries expected_nonce), or prerequisite_steps_required (a one-signature relay outside the sandbox; carries prerequisite_steps); conflicting_operation with Retry-After (a simulated treasury's relay that kept colliding with another request of the store at the same moment: nothing was done, retry)",
      ),
      410: err("envelope expired"),
      422: err(
        "Idempotency-Key reused with a different body; transaction_would_revert (`revert_reason`, and `aave_error` for Aave's), borrow_refused (Aave refuses the borrow), would_be_liquidatable (the call would leave the health factor under 1), broadcast_rejected or transaction_reverted (the step awaits a new signature)",
      ),
      503: err("the chain did not answer"),
      ...RATE_LIMITED,
    },
    errors: RELAY_ERRORS,
    idempotencyScope: ({ body }) => relayScope(body.tx_id, body.signed_transaction),
    storeOnly: ({ body }) => relay.storeOnly(body.tx_id),
    handler: async ({ body }) => {
      const outcome = await relay.relay(body.tx_id, body.signed_transaction as `0x${string}`);
      return { status: RELAY_STATUS[outcome.kind], body: outcome.result };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/relay/:tx_id",
    operationId: "getRelayStatus",
    summary: "State of one step's relay, reconciled with the chain (extension)",
    description:
      "awaiting_signature, broadcasting (sent, not mined yet; reconciled on every read) or relayed (with its receipt), and the signatures of the step that did not execute.",
    tags: ["Wallet loop"],
    extension: true,
    request: { params: RelayStepParams },
    responses: {
      200: { description: "relay status", schema: RelayStatus },
      400: err("malformed tx_id"),
      404: err("unknown tx_id"),
      503: err("the chain did not answer"),
      ...RATE_LIMITED,
    },
    // a step left broadcasting is reconciled with the chain before it is read
    errors: ["envelope_not_found", "chain_unavailable"],
    handler: async ({ params }) => ({ status: 200, body: await relay.status(params.tx_id) }),
  });
}
