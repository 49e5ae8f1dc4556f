/**
 * convert (spec 4.5): idle USDC into BTC or ETH collateral, 2% of the amount.
 * Wallet: fee transfer, USDC approval to the router, the Uniswap V3 swap
 * (1% below the quote at most), approval of the bought token to the Pool,
 * supply of the swap's guaranteed output (main).
 * Ledger: the same: idle USDC swapped at the sandbox's price, the guaranteed
 * output (1% under it) supplied.
 */
import { ASSETS, sandboxUnitsFor, type AssetSymbol } from "../domain/assets";
import { formatDecimal } from "../domain/money";
import { addCollateral } from "../domain/position";
import { LedgerError } from "../domain/sandbox-ledger";
import { actionAmounts, AMOUNT_ALIAS_RULES, schemaRules } from "../schemas/common";
import { z } from "../schemas/zod";
import { swapRouter02 } from "../contracts/uniswap";
import type { ActionDeclaration } from "./declaration";
import { approve, feeTransfer, minOutOf, POOL_NAME, ROUTER_NAME, supply, swapExactIn, tokenOf } from "./steps";

const symbolOf = (target: "btc" | "eth" | undefined): AssetSymbol => (target === "btc" ? "BTC" : "ETH");

export const ConvertRequest = z.strictObject({ ...actionAmounts(), target: z.enum(["btc", "eth"]) }).openapi("ConvertRequest", schemaRules(AMOUNT_ALIAS_RULES));

export const convert: ActionDeclaration<"convert"> = {
  name: "convert",
  direction: "up",
  fee: "buy",
  idPrefix: "cnv",
  receiptId: "conversion_id",
  status: "processing",
  proposedStatus: "processing",
  route: {
    path: "/api/v1/convert",
    operationId: "createConversion",
    summary: "Convert USDC into BTC or ETH exposure (2% of the amount)",
    toolDescription: "Convert idle USDC into BTC or ETH collateral (2% fee). Wallet mode: fee, approval, Uniswap V3 swap, approval, Aave supply.",
    example: { amount_usdc: 500, target: "eth" },
    price: { atomic: 50_100n, description: "Prepare or execute a conversion to BTC or ETH" },
  },
  body: ConvertRequest,
  params: (body) => (body.target ? { target: body.target } : {}),
  effect: addCollateral,
  ledger(h, amount, fee, params) {
    if (h.usdcMicro < amount) {
      throw new LedgerError("insufficient_balance", `convert needs ${formatDecimal(amount, 6)} USDC idle; the treasury holds ${formatDecimal(h.usdcMicro, 6)}`);
    }
    const symbol = symbolOf(params.target);
    // what the chain supplies: the swap's guaranteed output, 1% under the quote (the ledger's quote is the sandbox's price)
    const units = minOutOf(params.quoted !== undefined ? BigInt(params.quoted) : sandboxUnitsFor(symbol, amount - fee));
    return {
      holdings: { ...h, usdcMicro: h.usdcMicro - amount, ...(symbol === "BTC" ? { btcUnits: h.btcUnits + units } : { ethUnits: h.ethUnits + units }) },
      bought: { [symbol]: units },
      repaidMicro: 0n,
    };
  },
  walletNeeds: (amount) => ({ usdcMicro: amount }),
  sandboxUsdcMicro: (amount) => amount,
  quote: (params, amount, fee) => ({ from: "USDC", to: symbolOf(params.target), units: amount - fee }),
  plan(c, { amountMicro, feeMicro, feeRecipient, params }) {
    const net = amountMicro - feeMicro;
    const usdc = tokenOf(c, "USDC");
    const token = tokenOf(c, symbolOf(params.target));
    // the pool's quote when the action was planned (params.quoted); without one, the sandbox's price
    const minOut = minOutOf(params.quoted !== undefined ? BigInt(params.quoted) : sandboxUnitsFor(token.symbol, net));
    return [
      feeTransfer(c, "convert", feeMicro, feeRecipient),
      approve(c, usdc, swapRouter02(c.market.chainId), ROUTER_NAME, net),
      swapExactIn(c, usdc, token, net, minOut, "1% below the quote"),
      approve(c, token, c.market.pool, POOL_NAME, minOut),
      supply(c, token, minOut, true),
    ];
  },
  receipt: ({ id, amountMicro, fee, params, ledger }) => {
    const symbol = symbolOf(params.target);
    return {
      conversion_id: id,
      target: params.target,
      estimated_amount: Number(
        formatDecimal(ledger ? (ledger.bought[symbol] ?? 0n) : sandboxUnitsFor(symbol, amountMicro - fee.feeMicro), ASSETS[symbol].decimals),
      ),
      fee_basis: fee.basis,
    };
  },
  signer: {
    functions: ["transfer", "approve", "exactInputSingle", "supply"],
    //   fee F, approve(USDC -> router, N), swap(USDC -> target, N, min M), approve(target -> Pool, M), supply(target, M)   F + N = amount
    check(_calls, { amountMicro, target }, x) {
      const f = x.fee();
      const bought = target === "btc" ? x.market.btc : x.market.weth;
      const swap = x.only("swap", (c) => c.token === x.usdc && c.counterparty === bought && c.to === x.router, `USDC to ${target ?? "?"} swap`);
      const approveIn = x.only("approve", (c) => c.token === x.usdc && c.counterparty === x.router, "USDC approval to the router");
      const minOut = (swap.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
      const s = x.only("supply", (c) => c.token === bought && c.to === x.pool, "supply of the bought asset");
      const approveOut = x.only("approve", (c) => c.token === bought && c.counterparty === x.pool, "approval of the bought asset to the Pool");
      if (swap.amount + f !== amountMicro) x.refuse(`the conversion moves ${formatDecimal(swap.amount + f, 6)} USDC, not ${formatDecimal(amountMicro, 6)}`);
      if (approveIn.amount !== swap.amount) x.refuse("the USDC approval does not equal the swap");
      x.floor(swap);
      if (s.amount > minOut || approveOut.amount !== s.amount) x.refuse("the supply of the bought asset does not match the swap's guaranteed output");
      return 4 + (f > 0n ? 1 : 0);
    },
  },
  // the plan bounds the swap 1% under the pool's quote
  estimate: { fields: (body) => ({ target: body.target, dex_slippage_tolerance_pct: 1 }) },
  cli: {
    usage: "convert <amount_usdc> --target btc|eth",
    flags: { target: "what a conversion buys" },
    body: (amount, flags) => ({ amount_usdc: amount, ...(typeof flags.target === "string" ? { target: flags.target as "btc" | "eth" } : {}) }),
  },
};
