/**
 * The simulated treasury ledger: what an executed action does to the holdings
 * of a sandbox treasury. Pure; the same function runs for managed execution
 * and for a relayed wallet-mode envelope, so both end in the same state.
 *
 *   deposit  funds enter: fee taken, the net split into BTC/ETH by allocation (collateral)
 *   convert  idle USDC -> BTC or ETH collateral, fee taken from the amount
 *   borrow   debt += amount; the proceeds less the cycle fee land as idle USDC
 *   repay    idle USDC pays the debt, at most the debt (as Aave repays at most the debt)
 */
import { sandboxUnitsFor, sandboxValueMicro, type AssetSymbol } from "./assets";
import type { TreasuryAction } from "./fees";
import { formatDecimal, minBig, type Micro } from "./money";
import type { Holdings } from "./portfolio";

export class LedgerError extends Error {
  constructor(readonly code: "insufficient_balance" | "no_debt" | "invalid_request", message: string) {
    super(message);
  }
}

export interface ActionParams {
  /** deposit: percent to BTC and ETH, adding up to 100 */
  allocation?: { btc: number; eth: number };
  /** convert: the asset bought */
  target?: "btc" | "eth";
  /** borrow: a free label */
  purpose?: string;
}

export interface LedgerResult {
  holdings: Holdings;
  /** units bought (deposit/convert), by asset, token base units */
  bought: Partial<Record<AssetSymbol, bigint>>;
  /** amount of debt actually repaid (repay) */
  repaidMicro: Micro;
}

export function applyToLedger(h: Holdings, action: TreasuryAction, amount: Micro, fee: Micro, params: ActionParams): LedgerResult {
  const next: Holdings = { ...h };
  const bought: Partial<Record<AssetSymbol, bigint>> = {};
  let repaidMicro = 0n;
  switch (action) {
    case "deposit": {
      const net = amount - fee;
      const allocation = params.allocation ?? { btc: 50, eth: 50 };
      if (allocation.btc + allocation.eth !== 100) throw new LedgerError("invalid_request", "allocation btc and eth must add up to 100");
      const toBtc = (net * BigInt(Math.round(allocation.btc * 100))) / 10_000n;
      const toEth = net - toBtc;
      bought.BTC = sandboxUnitsFor("BTC", toBtc);
      bought.ETH = sandboxUnitsFor("ETH", toEth);
      next.btcUnits += bought.BTC;
      next.ethUnits += bought.ETH;
      break;
    }
    case "convert": {
      if (h.usdcMicro < amount) {
        throw new LedgerError("insufficient_balance", `convert needs ${formatUsdc(amount)} USDC idle; the treasury holds ${formatUsdc(h.usdcMicro)}`);
      }
      const symbol: AssetSymbol = params.target === "btc" ? "BTC" : "ETH";
      const units = sandboxUnitsFor(symbol, amount - fee);
      bought[symbol] = units;
      next.usdcMicro -= amount;
      if (symbol === "BTC") next.btcUnits += units;
      else next.ethUnits += units;
      break;
    }
    case "borrow":
      next.debtMicro += amount;
      next.usdcMicro += amount - fee;
      break;
    case "repay": {
      if (h.debtMicro === 0n) throw new LedgerError("no_debt", "the treasury has no debt to repay");
      repaidMicro = minBig(amount, h.debtMicro);
      if (h.usdcMicro < repaidMicro) {
        throw new LedgerError("insufficient_balance", `repaying ${formatUsdc(repaidMicro)} USDC needs that much idle USDC; the treasury holds ${formatUsdc(h.usdcMicro)}`);
      }
      next.usdcMicro -= repaidMicro;
      next.debtMicro -= repaidMicro;
      break;
    }
  }
  return { holdings: next, bought, repaidMicro };
}

function formatUsdc(micro: Micro): string {
  return formatDecimal(micro, 6);
}

/** value of what was bought, for receipts */
export function boughtValueMicro(bought: Partial<Record<AssetSymbol, bigint>>): Micro {
  return (bought.BTC ? sandboxValueMicro("BTC", bought.BTC) : 0n) + (bought.ETH ? sandboxValueMicro("ETH", bought.ETH) : 0n);
}
