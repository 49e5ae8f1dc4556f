/** The operator's queue of Safe transactions (extension, issue 15). */
import { TREASURY_ACTIONS, type TreasuryAction } from "@treasury/core/actions";
import { TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import { z } from "@treasury/core/schemas/zod";

const Hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);

export const SafeTransactionIdParams = z.object({
  id: z.string().regex(/^stx_[0-9a-f]{32}$/, "must be a Safe transaction id (stx_ and 32 hex digits)"),
});

export const SafeTransactionQuery = z.object({
  status: z
    .enum(["open", "all"])
    .optional()
    .openapi({
      param: { name: "status", in: "query" },
      description: "open (default): awaiting signatures or executing; all: every one, newest first (at most 100)",
    }),
});

export const SafeSignatureRequest = z
  .strictObject({
    signature: z
      .string()
      .regex(/^0x[0-9a-fA-F]{128}(?:1[bBcCfF]|20)$/, "must be a 65-byte signature (r, s, v) with v 27/28 (typed data) or 31/32 (eth_sign), 0x-prefixed hex")
      .openapi({
        description:
          "an owner's ECDSA signature of safe_tx_hash: eth_signTypedData_v4 of typed_data (v 27/28, 0x1b/0x1c), or eth_sign of the hash (v 31/32, 0x1f/0x20). One that recovers to no owner of the Safe (another hash's, r and s off the curve) is 403 not_an_owner",
      }),
  })
  .openapi("SafeSignatureRequest");

export const SafeTransaction = z
  .object({
    object: z.literal("safe_transaction"),
    id: z.string().regex(/^stx_/),
    treasury_id: z.string(),
    receipt_id: z.string().openapi({ description: "the action receipt this execution completes (GET /api/v1/receipts/{id})" }),
    action: z.enum(TREASURY_ACTIONS as [TreasuryAction, ...TreasuryAction[]]),
    amount_usdc: z.number(),
    title: z.string().openapi({
      description:
        "what it does, in one line, for an owner about to sign it (withdraw 0.1 ETH from Aave; exit: repay all USDC debt, withdraw everything supplied)",
    }),
    fee_usdc: z.number(),
    chain: z.enum(TREASURY_CHAINS),
    chain_id: z.number().int(),
    safe: Address,
    status: z.enum(["awaiting_signatures", "executing", "executed", "failed", "expired"]),
    safe_tx_hash: Hex,
    safe_tx: z.object({
      to: Address,
      value: z.string(),
      data: Hex,
      operation: z.union([z.literal(0), z.literal(1)]),
      safeTxGas: z.string(),
      baseGas: z.string(),
      gasPrice: z.string(),
      gasToken: Address,
      refundReceiver: Address,
      nonce: z.string(),
    }),
    typed_data: z.record(z.string(), z.unknown()),
    calls: z.array(z.object({ kind: z.string(), to: Address, value: z.string(), data: Hex, summary: z.record(z.string(), z.unknown()) })),
    signatures: z.array(z.object({ owner: Address, submitted_at: z.string() })),
    confirmations_required: z.number().int().optional(),
    tx_hash: Hex.nullable(),
    failure: z.object({ error: z.string(), message: z.string() }).nullable(),
    created_at: z.string(),
    expires_at: z.string(),
    updated_at: z.string(),
    sign: z.object({ url: z.string(), how: z.string() }),
  })
  .passthrough()
  .openapi("SafeTransaction", { description: "a managed action as one Safe transaction for the Safe's owners to sign; the service executes it once signed" });

export const SafeTransactionList = z.object({ object: z.literal("list"), data: z.array(SafeTransaction) }).openapi("SafeTransactionList");
