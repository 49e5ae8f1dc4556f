/**
 * The signer agent's rule over the decoded calls of an exit envelope (the exit's `signer` in its declaration).
 * It must close the debt: with debt, a closing repayment (the last repay, type(uint256).max; without one,
 * repayWithATokens max); before it, each withdrawal is sold at once (the next swap: the same token, the same
 * units) and every swap follows one; after it, withdrawals of everything (max) only, and swaps only when a sale
 * was asked; repays of USDC for this wallet, swaps for USDC to this wallet, each bounded at least at the
 * signer's own quote less its maximum slippage; approvals to the Pool and the router; no fee, no supply, no
 * borrow.
 */
import type { ActionDeclaration } from "./declaration";
import { bufferOf } from "./exit-sizing";
import { ALL } from "./steps";

export const exitSignerRule: ActionDeclaration<"exit">["signer"] = {
  functions: ["approve", "repay", "repayWithATokens", "withdraw", "exactInputSingle"],
  check(calls, intent, x) {
    const roles = new Set(calls.map((c) => c.role));
    for (const r of roles) if (!["approve", "repay", "withdraw", "swap"].includes(r)) x.refuse(`an exit has no ${r}`);
    const repays = calls.filter((c) => c.role === "repay");
    for (const r of repays) if (r.token !== x.usdc) x.refuse("an exit repays USDC only");
    const plain = calls.map((c, i) => [c, i] as const).filter(([c]) => c.role === "repay" && c.functionName === "repay");
    const lastPlain = plain.at(-1);
    if (lastPlain && lastPlain[0].amount !== ALL) x.refuse("the last repayment of an exit must be all of the debt (type(uint256).max)");
    const position = intent.position;
    const hasDebt = position === undefined || position.debt > 0n;
    const closing = lastPlain ? lastPlain[1] : calls.findIndex((c) => c.functionName === "repayWithATokens" && c.amount === ALL);
    if (closing < 0 && hasDebt) x.refuse("the exit does not repay all of the debt (no type(uint256).max repayment)");
    // repayWithATokens max closes the debt only when the supplied USDC covers it, with room for the interest until it runs
    if (!lastPlain && closing >= 0 && hasDebt && !(position && (position.supplied[x.usdc] ?? 0n) >= position.debt + bufferOf(position.debt))) {
      x.refuse("the supplied USDC does not cover the debt: the exit's last repayment must be all of the debt from the wallet (repay type(uint256).max)");
    }
    const end = closing < 0 ? -1 : closing;
    calls.forEach((c, i) => {
      if (i < end && c.role === "withdraw") {
        const next = calls.slice(i + 1).find((n) => n.role === "swap" || n.role === "withdraw");
        if (!next || next.role !== "swap" || next.token !== c.token)
          x.refuse("a withdrawal before the exit's last repayment must be sold at once for the same units");
        // all of a supply (max): the swap sells about all of it (the supply read here, less the interest that may accrue in between)
        const all = position?.supplied[c.token];
        const sameUnits = c.amount === ALL ? all !== undefined && next!.amount >= all - all / 1_000n : next!.amount === c.amount;
        if (!sameUnits) x.refuse("a withdrawal before the exit's last repayment must be sold at once for the same units");
      }
      if (i < end && c.role === "swap") {
        const before = calls
          .slice(0, i)
          .reverse()
          .find((n) => n.role === "swap" || n.role === "withdraw");
        if (!before || before.role !== "withdraw") x.refuse("a swap before the exit's last repayment must sell a withdrawal");
      }
      if (i > end && c.role === "withdraw" && c.amount !== ALL) x.refuse("after the exit's last repayment, only withdrawals of everything (type(uint256).max)");
      if (i > end && c.role === "swap" && intent.sell !== true) x.refuse("the exit sells collateral after its last repayment, and no sale was asked");
      if (i > end && c.role === "repay") x.refuse("a repayment after the exit's last one");
    });
    for (const s of calls.filter((c) => c.role === "swap")) {
      if (s.counterparty !== x.usdc) x.refuse("an exit's swaps sell for USDC only");
      x.floor(s);
    }
    for (const a of calls.filter((c) => c.role === "approve"))
      if (a.counterparty !== x.pool && a.counterparty !== x.router) x.refuse("an exit approves the Pool and the router only");
    for (const a of calls.filter((c) => c.role === "approve" && c.counterparty === x.pool))
      if (a.token !== x.usdc) x.refuse("an exit approves only USDC to the Pool (its repayments)");
    return calls.length;
  },
};
