/**
 * Help, rendered from the declarations (spec.ts; the actions from the
 * gateway's, actions.ts): the tool's overview, and each command's arguments,
 * flags, units, what it prints, examples and exit codes (exit-codes.ts).
 */
import { actionLines } from "./actions";
import { EXIT_CODES } from "./exit-codes";
import { AMOUNTS, COMMANDS, ENVIRONMENT, GLOBAL_FLAGS, type CommandSpec, type FlagSpec } from "./spec";

const flagLine = (f: FlagSpec) => `--${f.name}${f.value ? ` ${f.value}` : ""}`;

function table(rows: [string, string][], indent = "  "): string[] {
  const width = Math.max(0, ...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `${indent}${a.padEnd(width)}  ${b}`);
}

/** the synopsis of a command: "signer-agent run <action> [<amount>] [flags]" */
export function synopsis(c: CommandSpec): string {
  const args = c.subcommands ? ["<subcommand>"] : c.args.map((a) => (a.optional ? `[<${a.name}>]` : `<${a.name}>`));
  return ["signer-agent", c.name, ...args, ...(c.flags.length ? ["[flags]"] : [])].join(" ");
}

export function overview(): string {
  return [
    "signer-agent: sign the gateway's treasury envelopes with a local key, within a local policy",
    "",
    "usage: signer-agent <command> [arguments] [flags]",
    "       signer-agent help <command>   (or: signer-agent <command> --help)",
    "",
    "commands:",
    ...table(COMMANDS.map((c) => [c.name, c.about])),
    "",
    "actions (signer-agent run <action> ...: the gateway's declarations, @treasury/core/actions):",
    ...actionLines("signer-agent run"),
    "",
    ...AMOUNTS,
    "",
    "flags every command takes:",
    ...table([...GLOBAL_FLAGS.map((f): [string, string] => [flagLine(f), f.about]), ["-h, --help", "help for the command"]]),
    "",
    ...ENVIRONMENT,
    "",
    EXIT_CODES,
    "",
    "examples (with `npm start` running):",
    "  SIGNER_PASSPHRASE=demo-passphrase-not-secret signer-agent run deposit 500",
    "  signer-agent summary",
    '  KEY=$(SIGNER_PASSPHRASE=demo-passphrase-not-secret signer-agent register | node -p \'JSON.parse(require("fs").readFileSync(0,"utf8")).api_key\')',
    "  SIGNER_PASSPHRASE=demo-passphrase-not-secret signer-agent relay deposit.json",
    "",
  ].join("\n");
}

export function commandHelp(c: CommandSpec): string {
  const lines = [`usage: ${synopsis(c)}`, "", c.about, ...(c.details ? ["", ...c.details] : [])];
  if (c.subcommands) {
    lines.push(
      "",
      "subcommands:",
      ...table(c.subcommands.map((s) => [synopsis(s).replace(/^signer-agent /, ""), s.about])),
      "",
      `more: signer-agent ${c.name} <subcommand> --help`,
    );
  }
  if (!c.subcommands && c.args.length) {
    lines.push("", "arguments:", ...table(c.args.map((a) => [`<${a.name}>`, `${a.about}${a.optional ? " (optional)" : ""}`])));
  }
  if (c.name === "run" || c.name === "operator propose") {
    lines.push("", "actions (the gateway's declarations, @treasury/core/actions):", ...actionLines(`signer-agent ${c.name}`), "", ...AMOUNTS);
  } else if (c.args.some((a) => /amount|weth/.test(a.name)) || c.flags.some((f) => /usdc|amount/.test(f.value ?? ""))) {
    lines.push("", ...AMOUNTS);
  }
  if (c.flags.length) lines.push("", "flags:", ...table(c.flags.map((f) => [flagLine(f), f.about])));
  lines.push("  (and the flags every command takes: --dir, --gateway, --rpc, ...: signer-agent --help)");
  lines.push("", `prints: ${c.prints}`, "", "examples:", ...c.examples.map((e) => `  ${e}`), "", EXIT_CODES, "");
  return lines.join("\n");
}
