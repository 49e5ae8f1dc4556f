/**
 * borrow (spec 4.5): USDC against BTC/ETH collateral, the cycle fee; the
 * safety rail refuses one that ends above the ceiling (403 with safe_amount).
 * Wallet: the Pool's borrow (main), then the fee transfer from the proceeds.
 */
import { formatDecimal, usdcToNumber } from "../domain/money";
import { addDebt, borrowSafeAmount } from "../domain/position";
import { actionAmounts, AMOUNT_ALIAS_RULES, ErrorResponse, personText, SafetyRailError, schemaRules } from "../schemas/common";
import { z } from "../schemas/zod";
import type { ActionDeclaration } from "./declaration";
import { borrow as borrowCall, feeTransfer } from "./steps";

export const BorrowRequest = z
  .strictObject({ ...actionAmounts(), purpose: personText({ max: 200 }).optional() })
  .openapi("BorrowRequest", schemaRules(AMOUNT_ALIAS_RULES));

export const borrow: ActionDeclaration<"borrow"> = {
  name: "borrow",
  direction: "up",
  fee: "cycle",
  idPrefix: "brw",
  receiptId: "borrow_id",
  status: "approved",
  proposedStatus: "approved",
  route: {
    path: "/api/v1/borrow",
    operationId: "createBorrow",
    summary: "Borrow USDC against BTC/ETH collateral (cycle fee; safety rail)",
    toolDescription:
      "Borrow USDC against BTC/ETH collateral (cycle fee). Refused with ltv_limit_exceeded and a safe_amount above the ceiling, before any envelope exists.",
    example: { amount_usdc: 500 },
    price: { atomic: 50_200n, description: "Prepare or execute a borrow" },
    extraResponses: {
      403: {
        description:
          "safety rail (spec 2.2, ltv_limit_exceeded with safe_amount); or credential not bound to a treasury; or ownership_not_proven (a managed borrow on a Safe from a registration that is not the one the Safe itself proved)",
        schema: z.union([SafetyRailError, ErrorResponse]),
      },
    },
  },
  body: BorrowRequest,
  params: (body) => (body.purpose ? { purpose: body.purpose } : {}),
  effect: addDebt,
  safeAmount: borrowSafeAmount,
  ledger: (h, amount, fee) => ({ holdings: { ...h, debtMicro: h.debtMicro + amount, usdcMicro: h.usdcMicro + amount - fee }, bought: {}, repaidMicro: 0n }),
  walletNeeds: () => ({ usdcMicro: 0n }),
  sandboxUsdcMicro: () => 0n,
  plan: (c, { amountMicro, feeMicro, feeRecipient }) => [borrowCall(c, amountMicro, true), feeTransfer(c, "borrow", feeMicro, feeRecipient)],
  receipt: ({ id, amountMicro, fee, params, ltvBefore }) => ({
    borrow_id: id,
    fee_basis: fee.basis,
    current_ltv: ltvBefore,
    net_amount: usdcToNumber(amountMicro - fee.feeMicro),
    ...(params.purpose ? { purpose: params.purpose } : {}),
  }),
  signer: {
    functions: ["borrow", "transfer"],
    //   borrow(USDC, amount), fee F
    check(_calls, { amountMicro }, x) {
      const f = x.fee();
      const b = x.only("borrow", (c) => c.token === x.usdc && c.to === x.pool, "USDC borrow from the Pool");
      if (b.amount !== amountMicro) x.refuse(`the borrow takes ${formatDecimal(b.amount, 6)} USDC, not ${formatDecimal(amountMicro, 6)}`);
      return 1 + (f > 0n ? 1 : 0);
    },
  },
  estimate: { borrowRate: true },
  cli: { usage: "borrow <amount_usdc>", body: (amount) => ({ amount_usdc: amount }) },
};
