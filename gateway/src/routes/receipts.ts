/**
 * What the authenticated treasury's executions left on record (extensions): its fee audit trail, page by
 * page, and a receipt read again by its id, as recorded when the action executed. Both also take the
 * wallet's own signature (sign-in-with-x, free: services/wallet-signature.ts), so a keyless agent reads what
 * it paid for without paying again; the audit trail's 402 offers the sign-in beside its price.
 */
import { DECLARED } from "@treasury/core/actions";
import { TreasuryError } from "@treasury/core/lib/errors";
import { z } from "@treasury/core/schemas/zod";
import { requireCredential } from "../http/credential";
import { ActionReceipt, AuditList, AuditQuery } from "../schemas/actions";
import type { TreasuryService } from "../services/treasury-service";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

/** a receipt's id: a declared action's id prefix, or `exe` (a relayed envelope's execution), and 32 hex digits */
const RECEIPT_PREFIXES = [...DECLARED.map((d) => d.idPrefix), "exe"];
export const ReceiptIdParams = z.object({
  id: z
    .string()
    .regex(
      new RegExp(`^(${RECEIPT_PREFIXES.join("|")})_[0-9a-f]{32}$`),
      `must be a receipt id (${RECEIPT_PREFIXES.map((p) => `${p}_`).join(", ")} and 32 hex digits)`,
    ),
});

export function receiptRoutes(kit: RouteKit, treasuries: TreasuryService): void {
  kit.route<unknown, z.infer<typeof AuditQuery>, unknown>({
    method: "get",
    path: "/api/v1/audit",
    operationId: "getFeeAudit",
    summary: "Fee audit trail of the authenticated treasury (extension)",
    description:
      "Extension of the spec: every execution with amount, fee, basis, tier, trigger and time (spec 1, rule 5). Without a key: pay with x402, or sign in free with the wallet a treasury stands behind (SIGN-IN-WITH-X; the 402 offers both).",
    tags: ["Reads"],
    security: "bearer_or_x402",
    // metered: with x402 `upto` a page costs 300 + 2 per entry it returns (at most 1,300: a full page of 500); `exact` pays 1,300
    price: {
      atomic: 1_300n,
      description: "Treasury fee audit trail",
      meter: { baseAtomic: 300n, unitAtomic: 2n, unit: "entry", units: (answer) => ((answer as { data?: unknown[] }).data ?? []).length },
    },
    siwx: true,
    extension: true,
    request: { query: AuditQuery },
    responses: {
      200: { description: "a page of the fee audit trail, oldest first (`limit` entries, default 100)", schema: AuditList },
      400: err("invalid limit or cursor"),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    handler: async ({ res, query }) => {
      const treasuryId = requireCredential(res).treasuryId;
      return { status: 200, body: await treasuries.auditView(treasuryId, query) };
    },
  });

  kit.route<unknown, unknown, { id: string }>({
    method: "get",
    path: "/api/v1/receipts/:id",
    operationId: "getReceipt",
    tool: {
      name: "get_receipt",
      title: "A receipt",
      description:
        "A receipt of the authenticated treasury read again by its id (deposit_id, conversion_id, borrow_id, repayment_id, or a relayed envelope's execution id).",
    },
    summary: "A receipt of the authenticated treasury, by its id (extension)",
    description:
      "Extension of the spec: the receipt an executed action answered (deposit_id, conversion_id, borrow_id or repayment_id of a managed action; the execution of a relayed envelope), as recorded when it executed, read again; the answer's `chain_execution` (how that request ran) is not part of it. Another treasury's receipt is not found. Without a key: sign in free with the wallet a treasury stands behind (SIGN-IN-WITH-X; the 401 offers the challenge).",
    tags: ["Reads"],
    security: "bearer",
    siwx: true,
    extension: true,
    request: { params: ReceiptIdParams },
    responses: {
      200: { description: "the receipt as recorded when the action executed", schema: ActionReceipt },
      400: err("not a receipt id"),
      ...bearerRefusals(),
      404: err("no receipt of this treasury has this id"),
      ...RATE_LIMITED,
    },
    errors: ["not_found"],
    handler: async ({ res, params }) => {
      const receipt = await treasuries.receipt(requireCredential(res).treasuryId, params.id);
      if (!receipt) throw new TreasuryError("not_found", `no receipt ${params.id} for this treasury`);
      return { status: 200, body: receipt };
    },
  });
}
