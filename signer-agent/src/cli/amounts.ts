/**
 * Amounts as a person types them, parsed exactly (viem's parseUnits on the
 * text, never a float): digits and at most one point, at most `places`
 * decimals. A wrong one is a UsageError saying which argument, what was
 * typed, why it is not an amount, and what to write instead.
 */
import { parseUnits } from "viem";
import type { TreasuryAction } from "@treasury/core/actions";
import { actionUsage, isTreasuryAction } from "./actions";
import { UsageError } from "./args";

/** `text` as units of 10^-decimals, exact, at most `places` decimals; `what` names the argument ("amount", "--borrow") */
export function parseAmount(command: string, what: string, text: string, unit: string, decimals: number, places = 6): bigint {
  const hint = `whole ${unit}, up to ${places} decimals`;
  const fail = (why: string): never => {
    throw new UsageError(command, `${what} "${text}" ${why}`);
  };
  if (/^\d+(\.\d+)?$/.test(text)) {
    const frac = text.split(".")[1] ?? "";
    if (frac.length > places)
      fail(`has ${frac.length} decimals: ${unit} amounts take at most ${places} (write ${text.slice(0, text.length - (frac.length - places))})`);
    const units = parseUnits(text, decimals);
    if (units === 0n) fail(`is zero: give more than 0 ${unit}`);
    return units;
  }
  if (/^-\d/.test(text)) fail(`is negative: give a positive number of ${unit} (${hint})`);
  // a number with something around it: say what it is and what to write
  // a number with a unit or a currency sign around it (500usdc, $20, 0.5 ETH): the number is what to write
  const bare = /^\$?\s*([\d.,_\s]+?)\s*(usdc|usd|eth|weth|btc|cbbtc)?$/i.exec(text)?.[1]?.replace(/[,_\s]/g, "");
  const suggestion = bare && /^\d+(\.\d{1,6})?$/.test(bare) ? bare : "digits with at most one point, e.g. 500";
  if (/^\d+,\d{1,2}$|^\d+,\d{4,}$/.test(text)) fail(`is not a number of ${unit}: write ${text.replace(",", ".")} (a point for decimals, not a comma; ${hint})`);
  if (/^[\d.,_\s]+$/.test(text) && /[,_\s]/.test(text)) fail(`is not a number of ${unit}: write ${suggestion} (no thousands separators; ${hint})`);
  return fail(`is not a number of ${unit}: write ${suggestion} (${hint})`);
}

/** an action's arguments checked against its declaration: the amount it takes (or none), its required flags, each flag's values */
export function checkActionArgs(
  command: string,
  action: TreasuryAction,
  rest: string[],
  flags: Record<string, string | boolean>,
): { amount: string | undefined; unit: string } {
  const u = actionUsage(action);
  for (const f of u.flags) {
    const given = flags[f.name];
    if (given === undefined) {
      if (f.required) throw new UsageError(command, `${action} needs --${f.name}${f.choices ? ` ${f.choices.join("|")}` : ""}: ${u.usage}`);
      continue;
    }
    if (f.choices && (typeof given !== "string" || !f.choices.includes(given)))
      throw new UsageError(command, `--${f.name} "${String(given)}" is not one of ${f.choices.join("|")} for ${action}: ${u.usage}`);
    if (!f.choices && given !== true) throw new UsageError(command, `--${f.name} takes no value: ${u.usage}`);
  }
  for (const name of ["target", "asset", "sell"]) {
    if (flags[name] !== undefined && !u.flags.some((f) => f.name === name)) throw new UsageError(command, `--${name} does not apply to ${action}: ${u.usage}`);
  }
  const asset = typeof flags.asset === "string" ? flags.asset.toUpperCase() : "USDC";
  const unit = u.amount === "amount" ? asset : "USDC";
  if (!u.amount) {
    if (rest.length > 0) throw new UsageError(command, `${action} takes no amount ("${rest[0]}"): it closes everything; ${u.usage}`);
    return { amount: undefined, unit };
  }
  if (rest.length === 0)
    throw new UsageError(
      command,
      `missing <${u.amount}>: how much to ${action}, in ${unit === "USDC" ? "whole USDC (e.g. 500 = 500 USDC)" : `${unit} (e.g. 0.5)`}, up to 6 decimals; ${u.usage}`,
    );
  if (rest.length > 1) throw new UsageError(command, `unexpected argument "${rest[1]}" after the amount: ${u.usage}`);
  parseAmount(command, "amount", rest[0]!, unit, 6);
  return { amount: rest[0]!, unit };
}

/** the amounts and values a command line carries, checked before its command's module loads (a usage error answers at once) */
export function checkUsage(command: string, positional: string[], flags: Record<string, string | boolean>): void {
  if (command === "run" || command === "operator propose") {
    const [action, ...rest] = positional;
    if (isTreasuryAction(action)) checkActionArgs(command, action, rest, flags);
  }
  if (command === "relay" && typeof flags.amount === "string")
    parseAmount(command, "--amount", flags.amount, (typeof flags.asset === "string" ? flags.asset : "usdc").toUpperCase(), 6);
  if (command === "operator fund") {
    if (positional[0] !== undefined) parseAmount(command, "<weth>", positional[0], "WETH", 18, 18);
    if (typeof flags.borrow === "string") parseAmount(command, "--borrow", flags.borrow, "USDC", 6);
  }
  const protect = flags["protect-below"];
  if (command === "operator approve" && typeof protect === "string" && !/^\d+(\.\d{1,2})?$/.test(protect)) {
    throw new UsageError(command, `--protect-below "${protect}" is not a health score: a number with at most 2 decimals, e.g. 1.4`);
  }
}
