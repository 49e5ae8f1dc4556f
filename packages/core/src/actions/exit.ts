/**
 * exit: close the position. Free (a downward leg). Every USDC of debt is repaid
 * (the last repay is Aave's type(uint256).max, so no dust of interest remains,
 * whatever accrued between the envelope and the signature), then every supplied
 * asset is withdrawn with type(uint256).max (zero aTokens), and optionally the
 * ETH and BTC are sold for USDC. It ends with zero debt and zero aTokens.
 *
 * Where the repayment comes from, in this order (exit-sizing.ts):
 *   1. the supplied USDC (repayWithATokens, as much as the debt needs: it never
 *      lowers the health factor while it is above USDC's liquidation threshold);
 *   2. the wallet's own USDC;
 *   3. the collateral, in rounds, the lowest liquidation threshold first (the
 *      most value per unit of health factor given up): each round withdraws at
 *      most what leaves the health factor at EXIT_HEALTH (1.05) at the oracle's
 *      prices, swaps it for USDC (bounded 1% under the pool's quote) and repays
 *      what the swap guarantees. Only a withdrawal lowers the health factor, and
 *      each stops at 1.05, so Aave's liquidation threshold is never crossed.
 *
 * The plan is made on the chain's figures when the action is planned
 * (`exitSnapshot` in the service: exact debt and aToken units, the wallet's
 * USDC, oracle prices, liquidation thresholds) and kept in the envelope's params
 * (`exit`, exit-plan.ts), so the calls are the ones planned (exit-steps.ts).
 * The signer agent's rule over those calls: exit-signer-rule.ts.
 */
import { ASSETS } from "../domain/assets";
import { formatDecimal, minBig, usdcToNumber, type Micro } from "../domain/money";
import { closed } from "../domain/position";
import { LedgerError, type ActionParams } from "../domain/sandbox-ledger";
import { z } from "../schemas/zod";
import type { ActionDeclaration } from "./declaration";
import { withQuotes, type ExitPlan } from "./exit-plan";
import { exitSignerRule } from "./exit-signer-rule";
import { ceilDiv, valueOf, VOLATILE } from "./exit-sizing";
import { exitSteps } from "./exit-steps";

export const ExitRequest = z
  .strictObject({
    sell: z.boolean().optional().openapi({
      description: "also sell the ETH and BTC withdrawn for USDC (each swap bounded 1% under the pool's quote); default false: they stay in the wallet",
    }),
  })
  .openapi("ExitRequest", { description: "close the position: repay all debt, withdraw everything supplied, optionally sell it" });

const planOf = (p: ActionParams): ExitPlan | null => (p.exit ? (JSON.parse(p.exit) as ExitPlan) : null);

export const exit: ActionDeclaration<"exit"> = {
  name: "exit",
  direction: "down",
  fee: "none",
  idPrefix: "ext",
  receiptId: "exit_id",
  status: "completed",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/exit",
    operationId: "createExit",
    summary: "Close the position: repay all debt, withdraw everything supplied, optionally sell it (free)",
    toolDescription:
      "Close the position (free: a downward leg): repay all USDC debt (Aave's max repay, no dust), from the supplied USDC, the wallet's USDC, then collateral sold in rounds that never cross Aave's liquidation threshold; withdraw everything supplied; optionally sell the ETH and BTC for USDC. Ends with zero debt and zero aTokens.",
    example: { sell: false },
    price: { atomic: 50_600n, description: "Prepare or execute an exit" },
  },
  body: ExitRequest,
  params: (body) => (body.sell ? { sell: true } : {}),
  async planOnChain(params, snapshot, quote) {
    return { ...params, exit: JSON.stringify(await withQuotes(snapshot, params.sell === true, quote)) };
  },
  // what it repays: the debt planned (the service values it once the chain is read)
  valueMicro: (params) => BigInt(planOf(params)?.debt ?? "0"),
  effect: closed,
  // the record states the debt the exit repaid
  ledgerAmountMicro: (r) => r.repaidMicro,
  ledger(h, _amount, _fee, params) {
    const supplied = h.suppliedUsdcMicro ?? 0n;
    if (h.debtMicro === 0n && h.btcUnits === 0n && h.ethUnits === 0n && supplied === 0n)
      throw new LedgerError("insufficient_balance", "the treasury holds nothing to exit");
    // the supplied USDC comes out with the rest, and repays first
    let usdc = h.usdcMicro + supplied;
    let debt = h.debtMicro;
    const fromUsdc = minBig(usdc, debt);
    usdc -= fromUsdc;
    debt -= fromUsdc;
    let btc = h.btcUnits;
    let eth = h.ethUnits;
    // the rest of the debt from the collateral, filled at the sandbox's price (a sale's fill on a ledger), ETH first
    for (const symbol of VOLATILE) {
      if (debt === 0n) break;
      const price = ASSETS[symbol].sandboxPriceMicro;
      const units = symbol === "ETH" ? eth : btc;
      const needed = minBig(units, ceilDiv(debt * 10n ** BigInt(ASSETS[symbol].decimals), price));
      const proceeds = valueOf(symbol, needed, price);
      const paid = minBig(debt, proceeds);
      debt -= paid;
      usdc += proceeds - paid;
      if (symbol === "ETH") eth -= needed;
      else btc -= needed;
    }
    if (debt > 0n) throw new LedgerError("insufficient_balance", `the collateral does not cover the debt: ${formatDecimal(debt, 6)} USDC short`);
    if (params.sell) {
      usdc += valueOf("ETH", eth, ASSETS.ETH.sandboxPriceMicro) + valueOf("BTC", btc, ASSETS.BTC.sandboxPriceMicro);
    }
    // withdrawn (or sold): nothing stays in the treasury's books but the idle USDC
    return { holdings: { btcUnits: 0n, ethUnits: 0n, usdcMicro: usdc, debtMicro: 0n }, bought: {}, repaidMicro: h.debtMicro };
  },
  walletNeeds: (_amount, position) =>
    position.debtMicro === 0n && position.holdings.aUsdc === 0n && position.holdings.aWeth === 0n && position.holdings.aBtc === 0n
      ? { usdcMicro: 0n, refusal: { code: "insufficient_collateral", message: "the wallet has no position on Aave to exit" } }
      : { usdcMicro: 0n },
  sandboxUsdcMicro: () => 0n,
  plan(c, { params }) {
    const plan = planOf(params);
    if (!plan) throw new Error("an exit is planned on the chain's figures first (params.exit)");
    return exitSteps(c, plan);
  },
  title: (params) => `exit: repay all USDC debt, withdraw everything supplied${params.sell ? ", sell the ETH and BTC for USDC" : ""}`,
  receipt: ({ id, params, ledger }) => {
    const plan = planOf(params);
    return {
      exit_id: id,
      repaid_usdc: usdcToNumber(ledger ? ledger.repaidMicro : BigInt(plan?.debt ?? "0")),
      sold: params.sell === true,
      ...(plan ? { rounds_from_collateral: plan.rounds.length, withdrawn: plan.withdrawAll } : {}),
    };
  },
  onExecuted: (after: { debtMicro: Micro }) => ({ remaining_borrow: usdcToNumber(after.debtMicro) }),
  signer: exitSignerRule,
  cli: { usage: "exit [--sell]", flags: { sell: "an exit also sells the collateral for USDC" }, body: (_amount, flags) => (flags.sell ? { sell: true } : {}) },
};
