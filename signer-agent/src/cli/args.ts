/**
 * The command line checked against its declaration (spec.ts): the command and
 * subcommand, each flag known to it with a value where it takes one (and one
 * of its choices), the arguments it takes. Anything else is a UsageError that
 * names the word at fault and why (exit code 2).
 */
import { UsageError } from "../errors";
import { commandNamed, COMMANDS, GLOBAL_FLAGS, subcommandNamed, type CommandSpec, type FlagSpec } from "./spec";

export { UsageError };

export interface ParsedArgs {
  /** the command (a subcommand for operator), none for the bare tool */
  command?: CommandSpec;
  positional: string[];
  flags: Record<string, string | boolean>;
  help: boolean;
}

/** the closest of `candidates` to a mistyped `word` (two edits at most, or a prefix), for "did you mean" */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0]![j] = j;
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    return d[a.length]![b.length]!;
  };
  const scored = candidates.map((c) => ({ c, d: c.startsWith(word) && word.length >= 2 ? 0 : distance(word, c) })).sort((x, y) => x.d - y.d);
  return scored[0] && scored[0].d <= 2 ? scored[0].c : undefined;
}

const didYouMean = (word: string, candidates: readonly string[]) => {
  const c = closest(word, candidates);
  return c ? ` (did you mean ${c}?)` : "";
};

export function parseArgv(argv: string[]): ParsedArgs {
  let command: CommandSpec | undefined;
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  let help = false;
  const where = () => command?.name ?? "";
  const known = (): FlagSpec[] => [...GLOBAL_FLAGS, ...(command?.flags ?? [])];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-h" || a === "--help") {
      help = true;
      continue;
    }
    if (a === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
      const inline = eq === -1 ? undefined : a.slice(eq + 1);
      const spec = known().find((f) => f.name === name);
      if (!spec) {
        const names = known().map((f) => f.name);
        const own = command ? command.flags.map((f) => `--${f.name}`).join(", ") || "none of its own" : "";
        throw new UsageError(
          where(),
          `unknown flag --${name}${didYouMean(name, names).replace("mean ", "mean --")}${command ? `: ${command.name} takes ${own}, and the flags every command takes` : command === undefined && COMMANDS.some((c) => c.flags.some((f) => f.name === name)) ? ": a command's own flags go after the command" : ""}`,
        );
      }
      if (spec.value === undefined) {
        // a switch; --dev-raw-key=0x... may carry its key inline (development only)
        if (inline !== undefined && spec.name !== "dev-raw-key")
          throw new UsageError(where(), `--${name} takes no value (it is a switch): write --${name}, not ${a}`);
        flags[name] = inline ?? true;
        continue;
      }
      const value = inline ?? argv[i + 1];
      if (value === undefined || (inline === undefined && value.startsWith("--")))
        throw new UsageError(where(), `--${name} needs a value: --${name} ${spec.value}`);
      if (inline === undefined) i++;
      if (spec.choices && !spec.choices.includes(value))
        throw new UsageError(where(), `--${name} "${value}" is not one of ${spec.choices.join("|")}${didYouMean(value, spec.choices)}`);
      flags[name] = value;
      continue;
    }
    if (a.startsWith("-") && a !== "-" && !/^-\d/.test(a)) throw new UsageError(where(), `unknown flag ${a}: flags are written --name (and -h for help)`);
    if (!command) {
      command = commandNamed(a);
      if (!command)
        throw new UsageError(
          "",
          `unknown command "${a}"${didYouMean(
            a,
            COMMANDS.map((c) => c.name),
          )}; the commands: ${COMMANDS.map((c) => c.name).join(", ")}`,
        );
      continue;
    }
    if (command.subcommands) {
      const sub = subcommandNamed(command, a);
      const names = command.subcommands.map((c) => c.name.split(" ")[1]!);
      if (!sub) throw new UsageError(command.name, `unknown ${command.name} subcommand "${a}"${didYouMean(a, names)}; the subcommands: ${names.join(", ")}`);
      command = sub;
      continue;
    }
    positional.push(a);
  }
  return { command, positional, flags, help };
}

/** the arguments of a command checked against its declaration: each required one given, none too many, each of its choices */
export function checkArguments(command: CommandSpec, positional: string[]): void {
  const required = command.args.filter((a) => !a.optional);
  if (positional.length < required.length) {
    const arg = required[positional.length]!;
    throw new UsageError(command.name, `missing <${arg.name}>: ${arg.about}${arg.choices ? ` (${arg.choices.join(", ")})` : ""}`);
  }
  if (positional.length > command.args.length) {
    const extra = positional[command.args.length]!;
    throw new UsageError(
      command.name,
      command.args.length === 0
        ? `${command.name} takes no arguments; "${extra}" is one too many`
        : `unexpected argument "${extra}": ${command.name} takes ${command.args.map((a) => (a.optional ? `[<${a.name}>]` : `<${a.name}>`)).join(" ")}`,
    );
  }
  command.args.forEach((arg, i) => {
    const given = positional[i];
    if (given !== undefined && arg.choices && !arg.choices.includes(given)) {
      throw new UsageError(command.name, `unknown ${arg.name} "${given}"${didYouMean(given, arg.choices)}; one of: ${arg.choices.join(", ")}`);
    }
  });
}
