/**
 * repay (spec 4.5): idle USDC pays USDC debt, free (a downward leg); at most
 * the debt is repaid, as Aave repays at most the debt.
 * Wallet: USDC approval to the Pool, the Pool's repay (main).
 */
import { formatDecimal, minBig, usdcToNumber } from "../domain/money";
import { repayDebt } from "../domain/position";
import { LedgerError } from "../domain/sandbox-ledger";
import { actionAmounts, AMOUNT_ALIAS_RULES, schemaRules } from "../schemas/common";
import { z } from "../schemas/zod";
import type { ActionDeclaration } from "./declaration";
import { approve, POOL_NAME, repay as repayCall, tokenOf } from "./steps";

export const RepayRequest = z.strictObject({ ...actionAmounts() }).openapi("RepayRequest", schemaRules(AMOUNT_ALIAS_RULES));

export const repay: ActionDeclaration<"repay"> = {
  name: "repay",
  direction: "down",
  fee: "none",
  idPrefix: "rep",
  receiptId: "repayment_id",
  status: "completed",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/repay",
    operationId: "createRepayment",
    summary: "Repay USDC debt (free)",
    toolDescription: "Repay USDC debt from idle USDC (free; at most the debt is repaid). Wallet mode: USDC approval, then Aave repay at the variable rate.",
    example: { amount_usdc: 100 },
    price: { atomic: 50_300n, description: "Prepare or execute a repayment" },
  },
  body: RepayRequest,
  params: () => ({}),
  effect: repayDebt,
  ledger(h, amount) {
    if (h.debtMicro === 0n) throw new LedgerError("no_debt", "the treasury has no debt to repay");
    const repaid = minBig(amount, h.debtMicro);
    if (h.usdcMicro < repaid)
      throw new LedgerError(
        "insufficient_balance",
        `repaying ${formatDecimal(repaid, 6)} USDC needs that much idle USDC; the treasury holds ${formatDecimal(h.usdcMicro, 6)}`,
      );
    return { holdings: { ...h, usdcMicro: h.usdcMicro - repaid, debtMicro: h.debtMicro - repaid }, bought: {}, repaidMicro: repaid };
  },
  walletNeeds: (amount, position) =>
    position.debtMicro === 0n
      ? { usdcMicro: 0n, refusal: { code: "no_debt", message: "the wallet has no USDC debt on Aave to repay" } }
      : { usdcMicro: minBig(amount, position.debtMicro) },
  sandboxUsdcMicro: (amount) => amount,
  plan: (c, { amountMicro }) => [approve(c, tokenOf(c, "USDC"), c.market.pool, POOL_NAME, amountMicro), repayCall(c, amountMicro, true)],
  receipt: ({ id, amountMicro, ledger, debtAfterMicro }) => ({
    repayment_id: id,
    repaid_usdc: usdcToNumber(ledger ? ledger.repaidMicro : amountMicro),
    remaining_borrow: usdcToNumber(debtAfterMicro),
  }),
  onExecuted: (after) => ({ remaining_borrow: usdcToNumber(after.debtMicro) }),
  signer: {
    functions: ["approve", "repay"],
    //   approve(USDC -> Pool, amount), repay(USDC, amount); no fee (refused for every downward leg)
    check(_calls, { amountMicro }, x) {
      const r = x.only("repay", (c) => c.functionName === "repay" && c.token === x.usdc && c.to === x.pool, "USDC repayment to the Pool (from the wallet)");
      const a = x.only("approve", (c) => c.token === x.usdc && c.counterparty === x.pool, "USDC approval to the Pool");
      if (r.amount !== amountMicro) x.refuse(`the repayment moves ${formatDecimal(r.amount, 6)} USDC, not ${formatDecimal(amountMicro, 6)}`);
      if (a.amount !== amountMicro) x.refuse("the approval does not equal the repayment");
      return 2;
    },
  },
  estimate: { borrowRate: true },
  cli: { usage: "repay <amount_usdc>", body: (amount) => ({ amount_usdc: amount }) },
};
