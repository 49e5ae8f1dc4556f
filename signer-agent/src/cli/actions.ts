/**
 * The treasury actions as the command line takes them, derived from the
 * gateway's declarations (@treasury/core/actions: DECLARED, each one's `cli.usage`,
 * route summary and example), never restated here: what arguments and flags an
 * action takes, which are required, the values a flag accepts, the unit of its
 * amount, and an example command.
 */
import { DECLARED, declarationOf, TREASURY_ACTIONS, type TreasuryAction } from "@treasury/core/actions";

export interface ActionFlag {
  name: string;
  /** the values it takes; none: a switch */
  choices?: string[];
  required: boolean;
  /** what it means, as the declaration says (cli.flags) */
  about: string;
}

/** every flag any action takes, across the actions: its values, what it means, the actions that require it */
export interface UnionFlag extends Omit<ActionFlag, "required"> {
  requiredBy: TreasuryAction[];
}

export interface ActionUsage {
  name: TreasuryAction;
  /** the declaration's usage, as written: "convert <amount_usdc> --target btc|eth" */
  usage: string;
  /** its amount argument: amount_usdc (USDC), amount (the --asset's units), or none (exit) */
  amount: "amount_usdc" | "amount" | null;
  flags: ActionFlag[];
  summary: string;
  /** the declaration's example request as a command line (after `signer-agent run`) */
  example: string;
}

const flagsIn = (text: string, required: boolean, about: Record<string, string>): ActionFlag[] =>
  [...text.matchAll(/--([a-z-]+)(?: ([a-z0-9]+(?:\|[a-z0-9]+)+))?/g)].map((m) => ({
    name: m[1]!,
    ...(m[2] ? { choices: m[2].split("|") } : {}),
    required,
    about: about[m[1]!] ?? "as the action's usage says",
  }));

export function actionUsage(action: TreasuryAction): ActionUsage {
  const d = declarationOf(action);
  const usage = d.cli.usage;
  const optional = [...usage.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1]!).join(" ");
  const required = usage.replace(/\[[^\]]+\]/g, " ");
  const amount = /<amount_usdc>/.test(usage) ? "amount_usdc" : /<amount>/.test(usage) ? "amount" : null;
  const e = d.route.example;
  const exampleAmount = e.amount_usdc ?? e.amount;
  const example = [
    action,
    ...(amount && exampleAmount !== undefined ? [String(exampleAmount)] : []),
    ...(e.target ? [`--target ${e.target}`] : []),
    ...(e.asset ? [`--asset ${e.asset.toLowerCase()}`] : []),
    ...(e.sell ? ["--sell"] : []),
  ].join(" ");
  const about = d.cli.flags ?? {};
  return { name: action, usage, amount, flags: [...flagsIn(required, true, about), ...flagsIn(optional, false, about)], summary: d.route.summary, example };
}

export const ACTION_USAGES: ActionUsage[] = DECLARED.map((d) => actionUsage(d.name));

export const isTreasuryAction = (a: string | undefined): a is TreasuryAction => (TREASURY_ACTIONS as readonly (string | undefined)[]).includes(a);

/** every flag any action takes, its values and meanings the union of the actions' (for the commands' flag tables) */
export function actionFlags(): UnionFlag[] {
  const byName = new Map<string, UnionFlag>();
  for (const u of ACTION_USAGES) {
    for (const f of u.flags) {
      const known = byName.get(f.name);
      const choices = [...new Set([...(known?.choices ?? []), ...(f.choices ?? [])])];
      const abouts = [...new Set([...(known ? known.about.split("; ") : []), f.about])];
      const requiredBy = [...(known?.requiredBy ?? []), ...(f.required ? [u.name] : [])];
      byName.set(f.name, { name: f.name, ...(choices.length ? { choices } : {}), about: abouts.join("; "), requiredBy });
    }
  }
  return [...byName.values()];
}

/** the lines listing the actions: usage, what it does, an example (`prefix`: "signer-agent run") */
export function actionLines(prefix: string): string[] {
  const width = Math.max(...ACTION_USAGES.map((u) => u.usage.length));
  return ACTION_USAGES.flatMap((u) => [`  ${u.usage.padEnd(width)}  ${u.summary}`, `  ${" ".repeat(width)}  e.g. ${prefix} ${u.example}`]);
}
