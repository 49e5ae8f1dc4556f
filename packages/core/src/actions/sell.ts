/**
 * sell: sell ETH or BTC collateral for USDC, kept in the wallet. Free (a
 * downward leg). The units leave Aave (the withdraw's safety rail applies:
 * safe_amount in the asset's units), then the fork's real Uniswap V3 pool
 * swaps them for USDC with a bound: the pool's quote when the action is
 * planned (QuoterV2 on chain, the sandbox's price on a ledger) less 1%. A swap
 * that would return less reverts rather than fills; in wallet mode the asset
 * is then in the wallet, withdrawn, nothing lost.
 * Wallet: the Pool's withdraw (main), the token's approval to the router, the swap.
 * Ledger: the units out, the quote in as idle USDC.
 */
import { ASSETS, type AssetSymbol } from "../domain/assets";
import { formatDecimal, parseDecimal, usdcToNumber } from "../domain/money";
import { removeCollateral, withdrawSafeAmount } from "../domain/position";
import { LedgerError, type ActionParams } from "../domain/sandbox-ledger";
import { usdcAmount } from "../schemas/common";
import { z } from "../schemas/zod";
import type { ActionDeclaration, PriceOf, WalletPosition } from "./declaration";
import { unitsWorthAtMost } from "./withdraw";
import { approve, minOutOf, ROUTER_NAME, swapExactIn, SWAP_SLIPPAGE_BPS, tokenOf, withdraw as withdrawCall } from "./steps";
import { swapRouter02 } from "../contracts/uniswap";

export const SellRequest = z
  .strictObject({
    asset: z.enum(["ETH", "BTC"]).openapi({ description: "the collateral to sell for USDC" }),
    amount: usdcAmount({ exclusiveMin: 0, max: 100_000 }).openapi({
      exclusiveMinimum: 0,
      maximum: 100_000,
      description: "units of the asset to sell (at most 6 decimals)",
    }),
  })
  .openapi("SellRequest", { description: "sell ETH or BTC collateral for USDC, kept in the wallet; the swap is bounded at 1% under the pool's quote" });

const assetOf = (p: ActionParams): Exclude<AssetSymbol, "USDC"> => (p.asset === "BTC" ? "BTC" : "ETH");
const unitsOf = (p: ActionParams): bigint => BigInt(p.units ?? "0");
const quotedOf = (p: ActionParams): bigint => BigInt(p.quoted ?? "0");
const supplied = (symbol: AssetSymbol, h: WalletPosition["holdings"]) => (symbol === "ETH" ? h.aWeth : h.aBtc);
const valueOf = (symbol: AssetSymbol, units: bigint, price: PriceOf) => (units * price(symbol)) / 10n ** BigInt(ASSETS[symbol].decimals);

export const sell: ActionDeclaration<"sell"> = {
  name: "sell",
  direction: "down",
  fee: "none",
  idPrefix: "sel",
  receiptId: "sale_id",
  status: "completed",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/sell",
    operationId: "createSale",
    summary: "Sell ETH or BTC collateral for USDC kept in the wallet (free; safety rail; bounded swap)",
    toolDescription:
      "Sell ETH or BTC collateral for USDC kept in the wallet (free: a downward leg): withdraw from Aave, then swap in the Uniswap V3 pool for at least the pool's quote less 1% (a swap that would return less reverts). Above the ceiling it is refused with ltv_limit_exceeded and a safe_amount in the asset's units.",
    example: { asset: "ETH", amount: 0.5 },
    price: { atomic: 50_500n, description: "Prepare or execute a sale of collateral" },
  },
  body: SellRequest,
  params: (body) => {
    const asset = body.asset === "BTC" ? "BTC" : "ETH";
    return { asset, units: parseDecimal(String(body.amount ?? 0), ASSETS[asset].decimals).toString() };
  },
  valueMicro: (params, price) => valueOf(assetOf(params), unitsOf(params), price),
  quote: (params) => ({ from: assetOf(params), to: "USDC", units: unitsOf(params) }),
  safeUnits(params, safeMicro, price) {
    const symbol = assetOf(params);
    const decimals = ASSETS[symbol].decimals;
    return { amount: formatDecimal(unitsWorthAtMost(safeMicro, price(symbol), decimals), decimals), asset: symbol };
  },
  effect: (p, amount) => removeCollateral(p, amount),
  safeAmount: withdrawSafeAmount,
  ledger(h, _amount, _fee, params) {
    const symbol = assetOf(params);
    const units = unitsOf(params);
    const held = symbol === "ETH" ? h.ethUnits : h.btcUnits;
    if (units > held)
      throw new LedgerError(
        "insufficient_balance",
        `the treasury holds ${formatDecimal(held, ASSETS[symbol].decimals)} ${symbol}; ${formatDecimal(units, ASSETS[symbol].decimals)} cannot be sold`,
      );
    const proceeds = quotedOf(params);
    return {
      holdings: { ...h, ...(symbol === "ETH" ? { ethUnits: h.ethUnits - units } : { btcUnits: h.btcUnits - units }), usdcMicro: h.usdcMicro + proceeds },
      bought: {},
      repaidMicro: 0n,
    };
  },
  walletNeeds(_amount, position, params) {
    const symbol = assetOf(params);
    const has = supplied(symbol, position.holdings);
    if (unitsOf(params) > has) {
      const d = ASSETS[symbol].decimals;
      return {
        usdcMicro: 0n,
        refusal: {
          code: "insufficient_collateral",
          message: `the wallet has ${formatDecimal(has, d)} ${symbol} supplied to Aave; ${formatDecimal(unitsOf(params), d)} cannot be sold`,
        },
      };
    }
    return { usdcMicro: 0n };
  },
  sandboxUsdcMicro: () => 0n,
  plan(c, { params }) {
    const token = tokenOf(c, assetOf(params));
    const units = unitsOf(params);
    return [
      withdrawCall(c, token, units, true),
      approve(c, token, swapRouter02(c.market.chainId), ROUTER_NAME, units),
      swapExactIn(
        c,
        token,
        tokenOf(c, "USDC"),
        units,
        minOutOf(quotedOf(params)),
        `${Number(SWAP_SLIPPAGE_BPS) / 100}% below the pool's quote of ${formatDecimal(quotedOf(params), 6)} USDC`,
      ),
    ];
  },
  title: (params) =>
    `sell ${formatDecimal(unitsOf(params), ASSETS[assetOf(params)].decimals)} ${assetOf(params)} of collateral for USDC${params.quoted ? ` (at least ${formatDecimal(minOutOf(quotedOf(params)), 6)} USDC)` : ""}`,
  receipt: ({ id, params }) => {
    const symbol = assetOf(params);
    const quoted = quotedOf(params);
    return {
      sale_id: id,
      asset: symbol,
      amount: Number(formatDecimal(unitsOf(params), ASSETS[symbol].decimals)),
      quote_usdc: usdcToNumber(quoted),
      min_out_usdc: usdcToNumber(minOutOf(quoted)),
      slippage_bps: Number(SWAP_SLIPPAGE_BPS),
    };
  },
  signer: {
    functions: ["withdraw", "approve", "exactInputSingle"],
    //   withdraw(token, N, to = self), approve(token -> router, N), swap(token -> USDC, N, min M) with M at least
    //   the signer's own quote less its maximum slippage; no fee, nothing else
    check(_calls, intent, x) {
      const token = intent.asset === "BTC" ? x.market.btc : x.market.weth;
      const w = x.only("withdraw", (c) => c.token === token && c.to === x.pool, `${intent.asset ?? "?"} withdrawal from the Pool`);
      const a = x.only("approve", (c) => c.token === token && c.counterparty === x.router, `${intent.asset ?? "?"} approval to the router`);
      const swap = x.only("swap", (c) => c.token === token && c.counterparty === x.usdc && c.to === x.router, `${intent.asset ?? "?"} to USDC swap`);
      if (intent.units === undefined || w.amount !== intent.units) x.refuse(`the sale withdraws ${w.amount} units, not the ${intent.units ?? "?"} asked for`);
      if (a.amount !== w.amount || swap.amount !== w.amount) x.refuse("the approval and the swap must move exactly the units withdrawn");
      x.floor(swap);
      return 3;
    },
  },
  cli: {
    usage: "sell <amount> --asset eth|btc",
    flags: { asset: "what a sale takes" },
    // the asset as typed (upper-cased): the request's schema refuses one that is not ETH or BTC, or none
    body: (amount, flags) => (typeof flags.asset === "string" ? { asset: flags.asset.toUpperCase() as "ETH" | "BTC", amount } : { amount }),
  },
};
