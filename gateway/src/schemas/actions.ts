import { usdcAmount } from "./common";
import { z } from "./zod";

const amountField = () => usdcAmount({ exclusiveMin: 0, max: 100_000 }).openapi({ exclusiveMinimum: 0, maximum: 100_000 });

const actionBase = {
  amount_usdc: amountField().optional().openapi({ description: "USDC amount (required unless its alias `amount` is sent)" }),
  amount: amountField().optional().openapi({ description: "alias of amount_usdc; when both are sent they must be equal" }),
};

export const DepositRequest = z
  .strictObject({
    ...actionBase,
    allocation: z
      .strictObject({ btc: z.number().min(0).max(100), eth: z.number().min(0).max(100) })
      .refine((a) => a.btc + a.eth === 100, { message: "btc and eth must add up to 100" })
      .optional()
      .openapi({ description: "BTC/ETH split of the deposit, percent; default 50/50" }),
  })
  .openapi("DepositRequest");

export const ConvertRequest = z.strictObject({ ...actionBase, target: z.enum(["btc", "eth"]) }).openapi("ConvertRequest");
export const BorrowRequest = z.strictObject({ ...actionBase, purpose: z.string().max(200).optional() }).openapi("BorrowRequest");
export const RepayRequest = z.strictObject({ ...actionBase }).openapi("RepayRequest");

export const EstimateRequest = z
  .strictObject({
    action: z.enum(["deposit", "convert", "borrow", "repay"]),
    amount_usdc: usdcAmount({ exclusiveMin: 0 }).optional(),
    amount: usdcAmount({ exclusiveMin: 0 }).optional(),
    target: z.enum(["btc", "eth"]).optional(),
  })
  .openapi("EstimateRequest");

export const RelayRequest = z
  .strictObject({
    tx_id: z.string().regex(/^tx_/, "must start with tx_"),
    signed_transaction: z.string().regex(/^0x[0-9a-fA-F]+$/, "must be 0x-prefixed hex"),
  })
  .openapi("RelayRequest");
