/**
 * signer-agent: sign treasury envelopes with a local key. `signer-agent --help`
 * lists the commands; each explains itself (`signer-agent help <command>`,
 * `signer-agent <command> --help`). The command line is declared in
 * cli/spec.ts (the treasury actions come from the gateway's declarations,
 * cli/actions.ts), checked by cli/args.ts, rendered by cli/help.ts; the
 * commands live in cli/*-commands.ts.
 *
 * Exit codes: 0 done; 1 failed (gateway, chain, keystore); 2 usage error (the
 * argument, flag or input at fault named); 3 refused (policy, preflight, gateway):
 * each error code's in one table, cli/exit-codes.ts.
 * stdout carries the answer, stderr the progress and errors.
 */
import { agentConfig } from "./config";
import { RefusedError, SignerAgentError, UsageError } from "./errors";
import type { CommandContext } from "./cli/agent-commands";
import { checkUsage } from "./cli/amounts";
import { checkArguments, parseArgv } from "./cli/args";
import { EXIT_STATUS } from "./cli/exit-codes";
import { commandHelp, overview, synopsis } from "./cli/help";
import { out, progress } from "./cli/io";
import { commandNamed, subcommandNamed, type CommandSpec } from "./cli/spec";

/** each command's module, loaded when it runs (help and usage errors load none of them: they answer at once) */
const COMMANDS: Record<string, () => Promise<(ctx: CommandContext) => Promise<number>>> = {
  init: async () => (await import("./cli/agent-commands")).init,
  address: async () => (await import("./cli/agent-commands")).address,
  balance: async () => (await import("./cli/agent-commands")).balance,
  run: async () => (await import("./cli/agent-commands")).run,
  serve: async () => (await import("./cli/agent-commands")).serve,
  mcp: async () => (await import("./cli/mcp-command")).mcp,
  where: async () => (await import("./cli/agent-commands")).where,
  register: async () => (await import("./cli/treasury-commands")).register,
  relay: async () => (await import("./cli/treasury-commands")).relay,
  summary: async () => (await import("./cli/treasury-commands")).summary,
};

/** `help`, `help run`, `help operator approve` */
function help(names: string[]): number {
  const [name, sub] = names;
  if (!name) {
    out(overview());
    return 0;
  }
  const command = commandNamed(name);
  if (!command) throw new UsageError("help", `no command "${name}" to explain; the commands: see signer-agent --help`);
  const target: CommandSpec | undefined = sub ? subcommandNamed(command, sub) : command;
  if (!target) throw new UsageError("help", `no ${name} subcommand "${sub}"`);
  out(commandHelp(target));
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  let about = "";
  try {
    const { command, positional, flags, help: wantsHelp } = parseArgv(argv);
    about = command?.name ?? "";
    if (!command) {
      out(overview());
      return 0;
    }
    if (command.name === "help") return help(positional);
    if (wantsHelp) {
      out(commandHelp(command));
      return 0;
    }
    if (command.subcommands)
      throw new UsageError(command.name, `missing <subcommand>: one of ${command.subcommands.map((s) => s.name.split(" ")[1]).join(", ")}`);
    checkArguments(command, positional);
    checkUsage(command.name, positional, flags);
    const log = progress();
    if (command.name.startsWith("operator "))
      return await (await import("./cli/operator-commands")).operatorCommand(command.name.split(" ")[1]!, positional, flags, log);
    return await (
      await COMMANDS[command.name]!()
    )({ cfg: agentConfig(flags), positional, flags, log });
  } catch (err) {
    return fail(err, about);
  }
}

/** the error in plain words on stderr (its short message; a usage error with the command's usage), and its code's exit status */
function fail(err: unknown, about: string): number {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  if (err instanceof UsageError) {
    const command = commandNamed(err.command) ?? commandNamed(err.command.split(" ")[0] ?? "");
    const spec = command && err.command.includes(" ") ? (subcommandNamed(command, err.command.split(" ")[1]!) ?? command) : command;
    say(`signer-agent${err.command ? ` ${err.command}` : ""}: ${err.shortMessage}`);
    if (spec) say(`usage: ${synopsis(spec)}`);
    say(`more: signer-agent ${err.command ? `${err.command} ` : ""}--help`);
    return EXIT_STATUS[err.code];
  }
  const where = `signer-agent${about ? ` ${about}` : ""}`;
  if (err instanceof SignerAgentError) {
    const status = EXIT_STATUS[err.code];
    // a refusal says so, and where when it knows (refused at policy: ...)
    const refused = status === 3 ? (err instanceof RefusedError ? `refused at ${err.stage}: ` : "refused: ") : "";
    say(`${where}: ${refused}${err.shortMessage}`);
    return status;
  }
  const message = err instanceof Error ? err.message : String(err);
  // a chain that does not answer, in plain words (viem's text names the RPC URL)
  if (/HTTP request failed|fetch failed|ECONNREFUSED/.test(message)) {
    const url = /URL: (\S+)/.exec(message)?.[1];
    say(
      `${where}: ${url ? `${url} does not answer` : `a service did not answer (${message.split("\n")[0]})`}: is the local stack running (npm start)? Else point --rpc / --gateway at it`,
    );
    return 1;
  }
  say(`${where}: ${message.split("\n")[0]}`);
  return 1;
}
