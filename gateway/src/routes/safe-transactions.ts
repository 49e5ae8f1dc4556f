/**
 * The operator's queue of Safe transactions (extension, issue 15): a managed
 * action on a treasury whose wallet is a Safe waits here for the owners'
 * signatures; the service executes it once signed (protection/safe-executor.ts).
 */
import { requireCredential } from "../http/credential";
import { SafeSignatureRequest, SafeTransaction, SafeTransactionIdParams, SafeTransactionList, SafeTransactionQuery } from "../schemas/safe-transactions";
import type { SafeTransactionService } from "../services/safe-transaction-service";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

export function safeTransactionRoutes(kit: RouteKit, safeTransactions: SafeTransactionService): void {
  kit.route({
    method: "get",
    path: "/api/v1/safe-transactions",
    operationId: "listSafeTransactions",
    tool: {
      name: "list_safe_transactions",
      title: "Safe transactions awaiting the operator",
      description:
        "The managed treasury's Safe transactions (open by default: awaiting the Safe owners' signatures or executing), each with its calls, SafeTx hash and EIP-712 typed data to sign.",
    },
    summary: "The treasury's Safe transactions: managed actions awaiting the Safe owners' signatures (extension)",
    description:
      "Extension of the spec. A managed action on a treasury whose wallet is a Safe answers its 200 receipt and waits here as one Safe transaction (the action's approvals, fee transfer and Aave call, batched through Safe's MultiSendCallOnly) until the Safe's owners sign it; the service then executes it and the receipt moves to `completed` with the transaction hash, or `failed` with the reason. Newest first.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    request: { query: SafeTransactionQuery },
    responses: {
      200: { description: "the treasury's Safe transactions", schema: SafeTransactionList },
      400: err("invalid query"),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    handler: async ({ res, query }) => {
      const q = query as { status?: "open" | "all" };
      return { status: 200, body: { object: "list", data: await safeTransactions.list(requireCredential(res).treasuryId, q.status !== "all") } };
    },
  });

  kit.route({
    method: "get",
    path: "/api/v1/safe-transactions/:id",
    operationId: "getSafeTransaction",
    summary: "One Safe transaction of the treasury (extension)",
    description:
      "Extension of the spec: one Safe transaction of the authenticated treasury, with its status, signatures, and the execution's transaction hash or failure. Another treasury's is not found.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    request: { params: SafeTransactionIdParams },
    responses: {
      200: { description: "the Safe transaction", schema: SafeTransaction },
      400: err("not a Safe transaction id"),
      ...bearerRefusals(),
      404: err("no Safe transaction of this treasury has this id"),
      ...RATE_LIMITED,
    },
    errors: ["not_found"],
    handler: async ({ res, params }) => ({ status: 200, body: await safeTransactions.get(requireCredential(res).treasuryId, params.id) }),
  });

  kit.route({
    method: "post",
    path: "/api/v1/safe-transactions/:id/signatures",
    operationId: "signSafeTransaction",
    summary: "Add a Safe owner's signature (extension)",
    description:
      "Extension of the spec: an owner of the Safe signs `safe_tx_hash` (eth_signTypedData_v4 of `typed_data`, or eth_sign of the hash) and posts the signature. It is accepted only if it recovers to a current owner of the Safe on chain; once the Safe's threshold of owners signed, the service executes the Safe transaction, after checking the safety rail again against the position at that moment. Posting the same owner's signature again changes nothing.",
    tags: ["Managed"],
    security: "bearer",
    extension: true,
    request: { params: SafeTransactionIdParams, body: SafeSignatureRequest },
    responses: {
      200: { description: "the Safe transaction with the signature added (`signature.outcome`: added or already_signed)", schema: SafeTransaction },
      400: err("not a 65-byte ECDSA signature"),
      403: err(
        "the signature is not an owner's of the Safe (not_an_owner), or the treasury is not the registration the Safe itself proved (ownership_not_proven: its items take no signatures)",
      ),
      404: err("no Safe transaction of this treasury has this id"),
      409: err("the Safe transaction takes no more signatures (safe_transaction_not_open: executing, executed, failed or expired)"),
      ...RATE_LIMITED,
      ...bearerRefusals("the Safe's owners could not be read on its chain"),
    },
    errors: ["not_an_owner", "ownership_not_proven", "not_found", "safe_transaction_not_open", "chain_unavailable"],
    handler: async ({ res, params, body }) => ({
      status: 200,
      body: await safeTransactions.sign(requireCredential(res).treasuryId, params.id, (body as { signature: `0x${string}` }).signature),
    }),
  });
}
