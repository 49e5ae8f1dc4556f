/**
 * exit: close the position. Free (a downward leg). Every USDC of debt is repaid
 * (the last repay is Aave's type(uint256).max, so no dust of interest remains,
 * whatever accrued between the envelope and the signature), then every supplied
 * asset is withdrawn with type(uint256).max (zero aTokens), and optionally the
 * ETH and BTC are sold for USDC. It ends with zero debt and zero aTokens.
 *
 * Where the repayment comes from, in this order:
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
 * (`exit`), so the calls are the ones planned.
 */
import { ASSETS, type AssetSymbol } from "../domain/assets";
import { formatDecimal, minBig, usdcToNumber, type Micro } from "../domain/money";
import { closed } from "../domain/position";
import { LedgerError, type ActionParams } from "../domain/sandbox-ledger";
import { z } from "../schemas/zod";
import { PlanRefusal, type ActionDeclaration, type MarketSnapshot } from "./declaration";
import { ALL, approve, minOutOf, POOL_NAME, repay as repayCall, repayWithATokens, ROUTER_NAME, swapExactIn, tokenOf, withdraw as withdrawCall, type PlannedStep, type StepContext } from "./steps";
import { swapRouter02 } from "../../../contracts-abi/uniswap";

/** the health factor each withdrawal of collateral stops at, in basis points (1.05) */
export const EXIT_HEALTH_BPS = 10_500n;
/** how much under the oracle's value a round's swap is sized to return (the 1% bound, the pool's fee and its price impact) */
export const EXIT_SIZING_HAIRCUT_BPS = 300n;
/** the repayment's approval covers the debt planned plus this (interest until the envelope is signed), plus 1 unit */
export const EXIT_DEBT_BUFFER_BPS = 10n;
/** at most this many rounds of selling collateral */
export const EXIT_MAX_ROUNDS = 8;

export const ExitRequest = z
  .strictObject({
    sell: z.boolean().optional().openapi({ description: "also sell the ETH and BTC withdrawn for USDC (each swap bounded 1% under the pool's quote); default false: they stay in the wallet" }),
  })
  .openapi("ExitRequest", { description: "close the position: repay all debt, withdraw everything supplied, optionally sell it" });

type Volatile = "ETH" | "BTC";

/** what the chain says of the wallet when the exit is planned: exact units, oracle prices (micro-USDC per whole unit), liquidation thresholds (bps) */
export type ExitSnapshot = MarketSnapshot;

/** one round: collateral withdrawn (all of it, or some units), swapped for at least `minOut` USDC */
export interface ExitRound {
  symbol: Volatile;
  units: string;
  all: boolean;
  minOut: string;
}

/** the exit as planned (JSON-safe: kept in the envelope's params) */
export interface ExitPlan {
  /** the debt when planned, USDC units */
  debt: string;
  repayWithATokens: boolean;
  /** the last repayment's approval (the debt left after the supplied USDC, plus the buffer), 0 without debt left */
  approval: string;
  rounds: ExitRound[];
  /** assets still supplied after the rounds: withdrawn with type(uint256).max */
  withdrawAll: AssetSymbol[];
  /** with `sell`: the ETH and BTC withdrawn at the end, swapped for at least `minOut` USDC */
  sales: { symbol: Volatile; units: string; minOut: string }[];
}

const valueOf = (s: AssetSymbol, units: bigint, price: bigint) => (units * price) / 10n ** BigInt(ASSETS[s].decimals);
const unitsFor = (s: AssetSymbol, micro: bigint, price: bigint) => (micro * 10n ** BigInt(ASSETS[s].decimals)) / price;
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

export class ExitRefusal extends PlanRefusal {}

/**
 * The rounds an exit needs, sized on the oracle's prices (a swap's minimum out is then set from the pool's
 * quote: `withQuotes`). Pure: the order and the amounts that never cross Aave's liquidation threshold.
 */
export function sizeExit(s: ExitSnapshot, sell: boolean): { plan: Omit<ExitPlan, "rounds" | "sales">; rounds: { symbol: Volatile; units: bigint; all: boolean }[]; sales: { symbol: Volatile; units: bigint }[] } {
  const fromATokens = minBig(s.supplied.USDC, s.debt);
  const left = s.debt - fromATokens;
  const needed = left === 0n ? 0n : left + (left * EXIT_DEBT_BUFFER_BPS) / 10_000n + 1n;
  const remaining: Record<Volatile, bigint> = { ETH: s.supplied.ETH, BTC: s.supplied.BTC };
  const rounds: { symbol: Volatile; units: bigint; all: boolean }[] = [];
  // what the collateral still counts for toward Aave's health factor (micro-USDC x bps), and the debt it carries
  let weighted = (["ETH", "BTC"] as const).reduce((sum, a) => sum + valueOf(a, remaining[a], s.price[a]) * s.lt[a], 0n);
  let debt = left;
  let short = needed - minBig(needed, s.walletUsdc);
  const order = (["ETH", "BTC"] as const).filter((a) => remaining[a] > 0n).sort((a, b) => (s.lt[a] < s.lt[b] ? -1 : s.lt[a] > s.lt[b] ? 1 : 0));
  for (let i = 0; short > 0n && rounds.length < EXIT_MAX_ROUNDS; i++) {
    const symbol = order.find((a) => remaining[a] > 0n);
    if (!symbol) throw new ExitRefusal(`the collateral does not cover the debt: ${formatDecimal(short, 6)} USDC more is needed in the wallet`);
    const have = valueOf(symbol, remaining[symbol], s.price[symbol]);
    // the most this withdrawal may take and leave the health factor at EXIT_HEALTH: (weighted - h x debt) / lt
    const room = (weighted - EXIT_HEALTH_BPS * debt) / s.lt[symbol];
    if (room <= 0n) throw new ExitRefusal(`the position is too close to liquidation to withdraw collateral first (health factor under ${Number(EXIT_HEALTH_BPS) / 10_000}): repay some USDC from the wallet, then exit`);
    const want = ceilDiv(short * 10_000n, 10_000n - EXIT_SIZING_HAIRCUT_BPS);
    const take = minBig(have, minBig(room, want));
    const all = take === have;
    // bounded by the health factor: rounded down (never past 1.05); sized to the need: rounded up (its value covers it)
    const byRoom = take === room && room < want;
    const units = all ? remaining[symbol] : byRoom ? unitsFor(symbol, take, s.price[symbol]) : minBig(remaining[symbol], ceilDiv(take * 10n ** BigInt(ASSETS[symbol].decimals), s.price[symbol]));
    if (units === 0n) throw new ExitRefusal("the collateral left is too small to sell");
    const value = all ? have : valueOf(symbol, units, s.price[symbol]);
    rounds.push({ symbol, units, all });
    const out = (value * (10_000n - EXIT_SIZING_HAIRCUT_BPS)) / 10_000n;
    remaining[symbol] -= units;
    weighted -= value * s.lt[symbol];
    debt = debt > out ? debt - out : 0n;
    short = short > out ? short - out : 0n;
  }
  if (short > 0n) throw new ExitRefusal(`the exit needs more than ${EXIT_MAX_ROUNDS} rounds of selling collateral: repay some USDC from the wallet first`);
  const withdrawAll: AssetSymbol[] = [];
  if (s.supplied.USDC > fromATokens) withdrawAll.push("USDC");
  for (const a of ["ETH", "BTC"] as const) if (remaining[a] > 0n) withdrawAll.push(a);
  const sales = sell ? (["ETH", "BTC"] as const).filter((a) => remaining[a] > 0n).map((symbol) => ({ symbol, units: remaining[symbol] })) : [];
  return { plan: { debt: s.debt.toString(), repayWithATokens: fromATokens > 0n, approval: needed.toString(), withdrawAll }, rounds, sales };
}

/** the planned exit with each swap's minimum out: 1% under the pool's quote for its units; refused when the guaranteed USDC would not cover the debt */
export async function withQuotes(s: ExitSnapshot, sell: boolean, quote: (from: Volatile, units: bigint) => Promise<bigint>): Promise<ExitPlan> {
  const sized = sizeExit(s, sell);
  const rounds = await Promise.all(sized.rounds.map(async (r) => ({ symbol: r.symbol, units: r.units.toString(), all: r.all, minOut: minOutOf(await quote(r.symbol, r.units)).toString() })));
  const guaranteed = s.walletUsdc + rounds.reduce((sum, r) => sum + BigInt(r.minOut), 0n);
  if (guaranteed < BigInt(sized.plan.approval)) {
    throw new ExitRefusal(`at the pool's prices the collateral sold would guarantee ${formatDecimal(guaranteed, 6)} USDC of the ${formatDecimal(BigInt(sized.plan.approval), 6)} the debt needs: repay some USDC from the wallet first`);
  }
  const sales = await Promise.all(sized.sales.map(async (x) => ({ symbol: x.symbol, units: x.units.toString(), minOut: minOutOf(await quote(x.symbol, x.units)).toString() })));
  return { ...sized.plan, rounds, sales };
}

/** the calls of a planned exit, in order */
export function exitSteps(c: StepContext, plan: ExitPlan): PlannedStep[] {
  const usdc = tokenOf(c, "USDC");
  const router = swapRouter02(c.market.chainId);
  const steps: PlannedStep[] = [];
  let main = true;
  const pool = (step: (isMain: boolean) => PlannedStep) => {
    steps.push(step(main));
    main = false;
  };
  if (plan.repayWithATokens) pool((m) => repayWithATokens(c, ALL, m));
  const sold = (symbol: Volatile, units: bigint, minOut: bigint, note: string) => {
    const token = tokenOf(c, symbol);
    steps.push(approve(c, token, router, ROUTER_NAME, units), swapExactIn(c, token, usdc, units, minOut, note));
  };
  plan.rounds.forEach((r, i) => {
    const last = i === plan.rounds.length - 1;
    const units = BigInt(r.units);
    const minOut = BigInt(r.minOut);
    pool((m) => withdrawCall(c, tokenOf(c, r.symbol), r.all ? ALL : units, m));
    sold(r.symbol, units, minOut, "1% below the pool's quote");
    if (!last) {
      steps.push(approve(c, usdc, c.market.pool, POOL_NAME, minOut));
      pool((m) => repayCall(c, minOut, m));
    }
  });
  if (BigInt(plan.approval) > 0n) {
    // the last repayment: all of the debt, whatever interest accrued (Aave's type(uint256).max, for the borrower itself)
    steps.push(approve(c, usdc, c.market.pool, POOL_NAME, BigInt(plan.approval)));
    pool((m) => repayCall(c, ALL, m));
  }
  for (const a of plan.withdrawAll) pool((m) => withdrawCall(c, tokenOf(c, a), ALL, m));
  for (const x of plan.sales) sold(x.symbol, BigInt(x.units), BigInt(x.minOut), "1% below the pool's quote");
  return steps;
}

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
  ledger(h, _amount, _fee, params) {
    if (h.debtMicro === 0n && h.btcUnits === 0n && h.ethUnits === 0n) throw new LedgerError("insufficient_balance", "the treasury holds nothing to exit");
    let usdc = h.usdcMicro;
    let debt = h.debtMicro;
    const fromUsdc = minBig(usdc, debt);
    usdc -= fromUsdc;
    debt -= fromUsdc;
    let btc = h.btcUnits;
    let eth = h.ethUnits;
    // the rest of the debt from the collateral at the sandbox's price less the 1% bound, ETH first
    for (const symbol of ["ETH", "BTC"] as const) {
      if (debt === 0n) break;
      const units = symbol === "ETH" ? eth : btc;
      const proceeds = minOutOf(valueOf(symbol, units, ASSETS[symbol].sandboxPriceMicro));
      const needed = minBig(units, ceilDiv(unitsFor(symbol, debt, ASSETS[symbol].sandboxPriceMicro) * 10_000n, 9_900n));
      const paid = minBig(debt, needed === units ? proceeds : minOutOf(valueOf(symbol, needed, ASSETS[symbol].sandboxPriceMicro)));
      debt -= paid;
      usdc += (needed === units ? proceeds : minOutOf(valueOf(symbol, needed, ASSETS[symbol].sandboxPriceMicro))) - paid;
      if (symbol === "ETH") eth -= needed;
      else btc -= needed;
    }
    if (debt > 0n) throw new LedgerError("insufficient_balance", `the collateral does not cover the debt: ${formatDecimal(debt, 6)} USDC short`);
    if (params.sell) {
      usdc += minOutOf(valueOf("ETH", eth, ASSETS.ETH.sandboxPriceMicro)) + minOutOf(valueOf("BTC", btc, ASSETS.BTC.sandboxPriceMicro));
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
  signer: {
    functions: ["approve", "repay", "repayWithATokens", "withdraw", "exactInputSingle"],
    //   repays of USDC for this wallet, the last of them all of the debt (max); withdrawals to this wallet; swaps of ETH/BTC
    //   for USDC to this wallet, each bounded at least at the signer's own quote less its maximum slippage; approvals to the
    //   Pool and the router; no fee, no supply, no borrow
    check(calls, intent, x) {
      const roles = new Set(calls.map((c) => c.role));
      for (const r of roles) if (!["approve", "repay", "withdraw", "swap"].includes(r)) x.refuse(`an exit has no ${r}`);
      const repays = calls.filter((c) => c.role === "repay");
      for (const r of repays) if (r.token !== x.usdc) x.refuse("an exit repays USDC only");
      const last = repays.filter((r) => r.functionName === "repay").at(-1);
      if (repays.length > 0 && (!last || last.amount !== ALL)) x.refuse("the last repayment of an exit must be all of the debt (type(uint256).max)");
      for (const s of calls.filter((c) => c.role === "swap")) {
        if (s.counterparty !== x.usdc) x.refuse("an exit's swaps sell for USDC only");
        const minOut = (s.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
        const floor = intent.swapFloors?.find((f) => f.token === s.token && f.amountIn === s.amount)?.floor;
        if (floor === undefined) x.refuse("no quote of its own for a swap of the exit: not signed");
        if (minOut < floor!) x.refuse(`a swap of the exit accepts as little as ${formatDecimal(minOut, 6)} USDC, under the ${formatDecimal(floor!, 6)} the policy's maximum slippage allows`);
      }
      for (const a of calls.filter((c) => c.role === "approve")) if (a.counterparty !== x.pool && a.counterparty !== x.router) x.refuse("an exit approves the Pool and the router only");
      return calls.length;
    },
  },
  cli: { usage: "exit [--sell]", body: (_amount, flags) => (flags.sell ? { sell: true } : {}) },
};
