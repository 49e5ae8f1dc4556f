/**
 * withdraw: take collateral (ETH, BTC) or supplied USDC out of Aave, to the
 * wallet itself. Free (a downward leg). Taking collateral out raises LTV: the
 * borrow's safety rail applies (403 ltv_limit_exceeded, with `safe_amount` in
 * the asset's units: the most that keeps LTV at or under the ceiling, never
 * more than is supplied), and Aave's own rule after it (health factor at
 * least 1; under every preset's ceiling it always holds: the ceilings are
 * below every asset's liquidation threshold).
 * Wallet: one call, the Pool's withdraw(asset, units, wallet) (main).
 * Ledger: the units leave the books (USDC: from the idle USDC).
 */
import { ASSETS, type AssetSymbol } from "../domain/assets";
import { ceilDiv, formatDecimal, parseDecimal, type Micro } from "../domain/money";
import { removeCollateral, withdrawSafeAmount } from "../domain/position";
import { LedgerError, type ActionParams } from "../domain/sandbox-ledger";
import { actionAmounts, AMOUNT_ALIAS_RULES, AssetSchema, schemaRules } from "../schemas/common";
import { z } from "../schemas/zod";
import type { ActionDeclaration, PriceOf, WalletPosition } from "./declaration";
import { tokenOf, withdraw as withdrawCall } from "./steps";

/**
 * USDC: `amount_usdc` or its alias `amount` (as every USDC action); ETH and BTC: `amount`, in the asset's
 * units (at most 6 decimals, as every amount of the API: 0.000001 ETH or BTC is a few cents at most).
 */
export const WithdrawRequest = z
  .strictObject({
    asset: AssetSchema.optional().openapi({ description: "what to withdraw from Aave: USDC (default), ETH or BTC collateral" }),
    ...actionAmounts(),
  })
  .superRefine((b, ctx) => {
    if (b.amount === undefined && b.amount_usdc === undefined)
      ctx.addIssue({ code: "custom", path: ["amount"], message: "amount (or amount_usdc for USDC) is required" });
    if ((b.asset ?? "USDC") !== "USDC" && b.amount_usdc !== undefined)
      ctx.addIssue({ code: "custom", path: ["amount_usdc"], message: "amount_usdc is for USDC; give ETH and BTC in amount, in the asset's units" });
  })
  .openapi(
    "WithdrawRequest",
    schemaRules({
      ...AMOUNT_ALIAS_RULES,
      description: "what to withdraw from Aave to the wallet: USDC (amount_usdc or its alias amount), or ETH or BTC collateral (amount, in the asset's units)",
      if: { properties: { asset: { enum: ["ETH", "BTC"] } }, required: ["asset"] },
      then: { required: ["amount"], not: { required: ["amount_usdc"] } },
    }),
  );

/**
 * The most of an asset, in whole steps of what a request can state (6 decimals), whose value at `priceMicro` (a
 * whole unit's, rounded down as `valueMicro` values it) is at most `safeMicro`: the rail accepts it, and refuses one
 * step more. (The value rounds down, so the most is not the value's quotient rounded down: 2,345 micro-USDC of ETH at
 * 2,345.678901 USDC is 0.000001 ETH, worth 2,345 micro.)
 */
export function unitsWorthAtMost(safeMicro: Micro, priceMicro: bigint, decimals: number): bigint {
  const step = 10n ** BigInt(Math.max(0, decimals - 6));
  const most = ceilDiv((safeMicro + 1n) * 10n ** BigInt(decimals), priceMicro) - 1n;
  return (most / step) * step;
}

const assetOf = (p: ActionParams): AssetSymbol => p.asset ?? "USDC";
const unitsOf = (p: ActionParams): bigint => BigInt(p.units ?? "0");
const valueOf = (symbol: AssetSymbol, units: bigint, price: PriceOf) => (units * price(symbol)) / 10n ** BigInt(ASSETS[symbol].decimals);
const supplied = (symbol: AssetSymbol, h: WalletPosition["holdings"]) => (symbol === "USDC" ? h.aUsdc : symbol === "ETH" ? h.aWeth : h.aBtc);

export const withdraw: ActionDeclaration<"withdraw"> = {
  name: "withdraw",
  direction: "down",
  fee: "none",
  idPrefix: "wdr",
  receiptId: "withdrawal_id",
  status: "completed",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/withdraw",
    operationId: "createWithdrawal",
    summary: "Withdraw USDC, ETH or BTC from Aave to the wallet (free; safety rail)",
    toolDescription:
      "Withdraw supplied USDC or ETH/BTC collateral from Aave to the wallet itself (free: a downward leg). Taking collateral out raises LTV: above the ceiling it is refused with ltv_limit_exceeded and a safe_amount in the asset's units. Wallet mode: one Aave withdraw call.",
    example: { asset: "ETH", amount: 0.5 },
    price: { atomic: 50_400n, description: "Prepare or execute a withdrawal" },
  },
  body: WithdrawRequest,
  params(body) {
    const asset = body.asset ?? "USDC";
    const amount = body.amount ?? body.amount_usdc ?? 0;
    // USDC amounts have 6 decimals at most (the schema), ETH and BTC 8
    return { asset, units: parseDecimal(String(amount), ASSETS[asset].decimals).toString() };
  },
  valueMicro: (params, price) => valueOf(assetOf(params), unitsOf(params), price),
  safeUnits(params, safeMicro, price) {
    const symbol = assetOf(params);
    const decimals = ASSETS[symbol].decimals;
    // what a request can state (6 decimals): the retry with it is accepted and passes, one step more is refused
    return { amount: formatDecimal(unitsWorthAtMost(safeMicro, price(symbol), decimals), decimals), asset: symbol };
  },
  effect: (p, amount) => removeCollateral(p, amount),
  safeAmount: withdrawSafeAmount,
  ledger(h, _amount, _fee, params) {
    const symbol = assetOf(params);
    const units = unitsOf(params);
    const held = symbol === "USDC" ? (h.suppliedUsdcMicro ?? 0n) : symbol === "ETH" ? h.ethUnits : h.btcUnits;
    if (units > held)
      throw new LedgerError(
        "insufficient_balance",
        `the treasury holds ${formatDecimal(held, ASSETS[symbol].decimals)} ${symbol}; ${formatDecimal(units, ASSETS[symbol].decimals)} cannot be withdrawn`,
      );
    const holdings =
      symbol === "USDC"
        ? { ...h, suppliedUsdcMicro: held - units, usdcMicro: h.usdcMicro + units }
        : symbol === "ETH"
          ? { ...h, ethUnits: h.ethUnits - units }
          : { ...h, btcUnits: h.btcUnits - units };
    return { holdings, bought: {}, repaidMicro: 0n };
  },
  walletNeeds(_amount, position, params) {
    const symbol = assetOf(params);
    const units = unitsOf(params);
    const has = supplied(symbol, position.holdings);
    if (units > has) {
      const d = ASSETS[symbol].decimals;
      return {
        usdcMicro: 0n,
        refusal: {
          code: "insufficient_collateral",
          message: `the wallet has ${formatDecimal(has, d)} ${symbol} supplied to Aave; ${formatDecimal(units, d)} cannot be withdrawn`,
        },
      };
    }
    return { usdcMicro: 0n };
  },
  sandboxUsdcMicro: () => 0n,
  plan: (c, { params }) => [withdrawCall(c, tokenOf(c, assetOf(params)), unitsOf(params), true)],
  title: (params, amountMicro) =>
    assetOf(params) === "USDC"
      ? `withdraw ${formatDecimal(amountMicro, 6)} USDC from Aave`
      : `withdraw ${formatDecimal(unitsOf(params), ASSETS[assetOf(params)].decimals)} ${assetOf(params)} from Aave`,
  receipt: ({ id, params }) => {
    const symbol = assetOf(params);
    return { withdrawal_id: id, asset: symbol, amount: Number(formatDecimal(unitsOf(params), ASSETS[symbol].decimals)) };
  },
  signer: {
    functions: ["withdraw"],
    //   withdraw(asset, units, to = the wallet itself); nothing else, no fee
    check(_calls, intent, x) {
      const symbol = intent.asset ?? "USDC";
      const token = symbol === "USDC" ? x.usdc : symbol === "ETH" ? x.market.weth : x.market.btc;
      const w = x.only("withdraw", (c) => c.token === token && c.to === x.pool, `${symbol} withdrawal from the Pool`);
      if (intent.units === undefined || w.amount !== intent.units)
        x.refuse(`the withdrawal takes ${w.amount} units of ${symbol}, not the ${intent.units ?? "?"} asked for`);
      return 1;
    },
  },
  cli: {
    usage: "withdraw <amount> [--asset usdc|eth|btc]",
    flags: { asset: "what a withdrawal takes (default usdc)" },
    body: (amount, flags) => ({ asset: (typeof flags.asset === "string" ? flags.asset.toUpperCase() : "USDC") as "USDC" | "ETH" | "BTC", amount }),
  },
};
