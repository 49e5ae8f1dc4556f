/**
 * deposit (spec 4.5): USDC enters the service, 2% entry fee; minimum 100 USDC.
 * Wallet: fee transfer, USDC approval to the Pool, supply of the rest (main).
 * Ledger: what the chain does: the net amount supplied to Aave as USDC, paid
 * from the idle USDC first (what it lacks enters with the deposit). The
 * allocation buys nothing, on a chain or a ledger: it is recorded on the
 * receipt; BTC or ETH exposure is a convert's, at the convert's fee.
 */
import { formatDecimal, parseUsdc, usdcToNumber } from "../domain/money";
import { actionAmounts, AMOUNT_ALIAS_RULES, schemaRules, X_RULES } from "../schemas/common";
import { z } from "../schemas/zod";
import { addCollateral } from "../domain/position";
import { LedgerError } from "../domain/sandbox-ledger";
import type { ActionDeclaration } from "./declaration";
import { approve, feeTransfer, POOL_NAME, supply, tokenOf } from "./steps";

/** deposits start at 100 USDC (spec 8) */
export const MIN_DEPOSIT_USDC = 100;

export const DepositRequest = z
  .strictObject({
    ...actionAmounts(MIN_DEPOSIT_USDC),
    allocation: z
      .strictObject({ btc: z.number().min(0).max(100), eth: z.number().min(0).max(100) })
      .refine((a) => a.btc + a.eth === 100, { message: "btc and eth must add up to 100" })
      .optional()
      .openapi(
        schemaRules({
          description:
            "BTC/ETH split of the deposit, percent; default 50/50; btc + eth = 100. Recorded on the receipt; it buys nothing: the deposit supplies its net amount to Aave as USDC on every path, and BTC or ETH exposure is a convert's, at the convert's 2% fee",
          [X_RULES.sumEquals]: { members: ["btc", "eth"], equals: 100 },
        }),
      ),
  })
  .openapi("DepositRequest", schemaRules(AMOUNT_ALIAS_RULES));

export const deposit: ActionDeclaration<"deposit"> = {
  name: "deposit",
  direction: "up",
  fee: "deposit",
  idPrefix: "dep",
  receiptId: "deposit_id",
  status: "processing",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/deposits",
    operationId: "createDeposit",
    summary: "Deposit USDC (2% entry fee; minimum 100 USDC)",
    toolDescription:
      "Deposit USDC (minimum 100; 2% fee). Wallet-mode treasuries get an unsigned envelope of real Aave V3 calls to sign and relay; managed ones execute in simulation.",
    example: { amount_usdc: 1000 },
    price: { atomic: 50_000n, description: "Prepare or execute a deposit" },
  },
  body: DepositRequest,
  params: (body) => (body.allocation ? { allocation: body.allocation } : {}),
  minimumMicro: parseUsdc(MIN_DEPOSIT_USDC),
  effect: addCollateral,
  ledger(h, amount, fee, params) {
    const allocation = params.allocation ?? { btc: 50, eth: 50 };
    if (allocation.btc + allocation.eth !== 100) throw new LedgerError("invalid_request", "allocation btc and eth must add up to 100");
    const usdcMicro = h.usdcMicro > amount ? h.usdcMicro - amount : 0n;
    return { holdings: { ...h, usdcMicro, suppliedUsdcMicro: (h.suppliedUsdcMicro ?? 0n) + amount - fee }, bought: {}, repaidMicro: 0n };
  },
  walletNeeds: (amount) => ({ usdcMicro: amount }),
  sandboxUsdcMicro: (amount) => amount,
  plan(c, { amountMicro, feeMicro, feeRecipient }) {
    const net = amountMicro - feeMicro;
    const usdc = tokenOf(c, "USDC");
    return [feeTransfer(c, "deposit", feeMicro, feeRecipient), approve(c, usdc, c.market.pool, POOL_NAME, net), supply(c, usdc, net, true)];
  },
  receipt: ({ id, amountMicro, fee, params }) => ({
    deposit_id: id,
    net_amount: usdcToNumber(amountMicro - fee.feeMicro),
    fee_basis: fee.basis,
    allocation: params.allocation ?? { btc: 50, eth: 50 },
    supplied_usdc: usdcToNumber(amountMicro - fee.feeMicro),
  }),
  signer: {
    functions: ["transfer", "approve", "supply"],
    //   fee F, approve(USDC -> Pool, N), supply(USDC, N)         F + N = amount
    check(_calls, { amountMicro }, x) {
      const f = x.fee();
      const s = x.only("supply", (c) => c.token === x.usdc && c.to === x.pool, "USDC supply to the Pool");
      const a = x.only("approve", (c) => c.token === x.usdc && c.counterparty === x.pool, "USDC approval to the Pool");
      if (s.amount + f !== amountMicro)
        x.refuse(
          `the deposit moves ${formatDecimal(s.amount + f, 6)} USDC (supply ${formatDecimal(s.amount, 6)} + fee ${formatDecimal(f, 6)}), not the ${formatDecimal(amountMicro, 6)} asked for`,
        );
      if (a.amount !== s.amount) x.refuse("the approval does not equal the supply");
      return 2 + (f > 0n ? 1 : 0);
    },
  },
  cli: { usage: "deposit <amount_usdc>", body: (amount) => ({ amount_usdc: amount }) },
};
