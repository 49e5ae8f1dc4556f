/**
 * What the command line takes, declared once: each command's arguments,
 * flags, what it prints and an example. The argument parser (args.ts) checks
 * a command line against it and help.ts renders it; the treasury actions come
 * from the gateway's declarations (actions.ts).
 */
import { DECLARED, TREASURY_ACTIONS } from "@treasury/core/actions";
import { ACTION_USAGES, actionFlags } from "./actions";

/** from the declarations: the actions whose amount is in an asset's units, the ones asked without an amount, the downward legs */
const IN_UNITS = ACTION_USAGES.filter((u) => u.amount === "amount").map((u) => u.name);
const NO_AMOUNT = ACTION_USAGES.filter((u) => u.amount === null).map((u) => u.name);
const DOWNWARD = DECLARED.filter((d) => d.direction === "down").map((d) => d.name);

export interface ArgSpec {
  name: string;
  about: string;
  optional?: boolean;
  choices?: readonly string[];
}

export interface FlagSpec {
  name: string;
  /** the value's placeholder ("<url>", "btc|eth"); none: a switch */
  value?: string;
  choices?: readonly string[];
  about: string;
}

export interface CommandSpec {
  /** "run", or "operator approve" */
  name: string;
  about: string;
  args: ArgSpec[];
  flags: FlagSpec[];
  details?: string[];
  prints: string;
  examples: string[];
  /** a command of subcommands (operator) */
  subcommands?: CommandSpec[];
}

export const AMOUNTS = [
  "amounts: USDC in whole units: 500 means 500 USDC; decimals allowed up to 6 places (0.5, 1234.567891).",
  "  Digits and one point only: no thousands separators (1000, not 1,000), no unit (500, not 500usdc).",
  `  ETH and BTC amounts (${IN_UNITS.join(", ")} with --asset) are in the asset's units, also up to 6 decimals.`,
];

export const GLOBAL_FLAGS: FlagSpec[] = [
  {
    name: "dir",
    value: "<path>",
    about: "the agent's directory: keystore.json, policy.json, audit.jsonl (SIGNER_DIR; while `npm start` runs, its demo agent's; else ./.data/agent)",
  },
  { name: "keystore", value: "<file>", about: "the encrypted keystore (SIGNER_KEYSTORE; <dir>/keystore.json)" },
  { name: "policy", value: "<file>", about: "what the agent will sign (SIGNER_POLICY; <dir>/policy.json)" },
  { name: "audit-log", value: "<file>", about: "every signature, refusal and payment (SIGNER_AUDIT_LOG; <dir>/audit.jsonl)" },
  { name: "gateway", value: "<url>", about: "the gateway (SIGNER_GATEWAY_URL; the running stack's; else http://127.0.0.1:4020)" },
  { name: "rpc", value: "<url>", about: "the chain the agent preflights on and reads (SIGNER_RPC_URL; the stack's fork; else http://127.0.0.1:8545)" },
  { name: "x402-rpc", value: "<url>", about: "Base Sepolia for x402 payments (SIGNER_X402_RPC_URL; else http://127.0.0.1:8546)" },
  { name: "dev-raw-key", about: "development only: use the raw key in SIGNER_DEV_PRIVATE_KEY instead of the keystore" },
];

export const ENVIRONMENT = [
  "environment: SIGNER_PASSPHRASE (the keystore's passphrase; else asked in a terminal), SIGNER_DIR, SIGNER_KEYSTORE,",
  "  SIGNER_POLICY, SIGNER_AUDIT_LOG, SIGNER_GATEWAY_URL, SIGNER_RPC_URL, SIGNER_X402_RPC_URL, SIGNER_X402_SCHEME, SIGNER_BEARER_KEY,",
  "  SIGNER_SERVE_TOKEN, OPERATOR_DIR, SIGNER_DEV_PRIVATE_KEY. While `npm start` runs, the defaults are its own",
  "  (its stack file: STACK_FILE or .data/stack.json).",
];

const JSON_FLAG: FlagSpec = { name: "json", about: "print one JSON document (exact amounts as decimal strings) instead of the summary" };
const X402_SCHEME: FlagSpec = {
  name: "x402-scheme",
  value: "exact|session",
  choices: ["exact", "session"],
  about:
    "how x402 is paid (SIGNER_X402_SCHEME): exact, one transfer a request (default); session, one deposit on chain, then a voucher a request (its channel kept in <dir>/x402-sessions)",
};
const BEARER: FlagSpec = { name: "bearer", value: "<key>", about: "authenticate with this API key instead of paying with x402 (SIGNER_BEARER_KEY)" };

const OPERATOR_NOTE =
  "The operator's directory: --dir, OPERATOR_DIR, the running stack's operator, else ./.data/operator; its state (Safe, treasury, key, module) in operator.json there.";

const OPERATOR: CommandSpec[] = [
  {
    name: "operator create-safe",
    about: "deploy a Safe 1.4.1 owned by the operator alone (threshold 1)",
    args: [],
    flags: [],
    prints: "the Safe's address (stdout); progress on stderr",
    examples: ["signer-agent operator create-safe"],
  },
  {
    name: "operator fund",
    about: "wrap the operator's ETH into WETH, supply it to Aave through the Safe, and optionally borrow USDC",
    args: [{ name: "weth", about: "WETH to supply, in whole WETH (10 = 10 WETH), up to 18 decimals; default 1", optional: true }],
    flags: [{ name: "borrow", value: "<usdc>", about: "USDC to borrow against it, whole USDC (15000 = 15,000 USDC), up to 6 decimals" }],
    prints: "what was supplied and borrowed (stdout); progress on stderr",
    examples: ["signer-agent operator fund 10 --borrow 15000"],
  },
  {
    name: "operator register",
    about: "register a managed treasury for the Safe, proven by the Safe's own signature (EIP-1271)",
    args: [],
    flags: [],
    prints: "the treasury id (stdout); its API key is kept in operator.json",
    examples: ["signer-agent operator register"],
  },
  {
    name: "operator approve",
    about: "deploy the ProtectionModule, attach it with the Safe's signature, and enable it on the Safe (the delegation)",
    args: [],
    flags: [
      {
        name: "protect-below",
        value: "<health>",
        about: "protect when the health score falls below this (e.g. 1.4; 2 decimals at most); default: the preset's",
      },
      { name: "upgrade", about: "replace the module in force with one of this build, in one Safe transaction" },
    ],
    prints: "the module and the delegation's state as JSON (stdout); progress on stderr",
    examples: ["signer-agent operator approve", "signer-agent operator approve --protect-below 1.4"],
  },
  {
    name: "operator revoke",
    about: "disable the module on the Safe: the protection engine can no longer act",
    args: [],
    flags: [],
    prints: "the Safe transaction (stdout)",
    examples: ["signer-agent operator revoke"],
  },
  {
    name: "operator propose",
    about: "a managed action through the Safe: the gateway answers its receipt and queues one Safe transaction for the owners",
    args: [
      { name: "action", about: "one of the gateway's actions (signer-agent run --help lists them)", choices: TREASURY_ACTIONS },
      { name: "amount", about: "as `run` takes it: whole USDC (500 = 500 USDC), up to 6 decimals", optional: true },
    ],
    flags: actionFlags().map((f) => ({ name: f.name, ...(f.choices ? { value: f.choices.join("|"), choices: f.choices } : {}), about: "as `run` takes it" })),
    prints: "the receipt and the queued Safe transaction (stdout)",
    examples: ["signer-agent operator propose borrow 100"],
  },
  {
    name: "operator queue",
    about: "list the Safe transactions awaiting the owners' signatures",
    args: [],
    flags: [],
    prints: "one line per Safe transaction (stdout)",
    examples: ["signer-agent operator queue"],
  },
  {
    name: "operator sign",
    about: "sign the open Safe transactions (or the one named), each checked against the Safe itself first",
    args: [{ name: "stx_id", about: "the Safe transaction to sign (stx_...); default: every open one", optional: true }],
    flags: [{ name: "wait", about: "wait (at most a minute) until the service has executed it" }],
    prints: "a line per signature and execution (stdout); progress on stderr",
    examples: ["signer-agent operator sign --wait"],
  },
  {
    name: "operator status",
    about: "the delegation and the treasury's health, as the gateway states them",
    args: [],
    flags: [{ ...JSON_FLAG, about: "print one JSON document {delegation, health} instead of the summary" }],
    prints: "a human summary (stdout), or with --json one JSON document",
    examples: ["signer-agent operator status", "signer-agent operator status --json | jq .delegation.state"],
  },
  {
    name: "operator events",
    about: "the treasury's event log (GET /api/v1/events), a line per event, oldest first",
    args: [],
    flags: [{ name: "wait", value: "<type>", about: "poll until an event of this type is in the log (at most a minute), e.g. protection.acted" }],
    prints: "a line per event: its sequence, its type and what it says (stdout)",
    examples: ["signer-agent operator events", "signer-agent operator events --wait protection.acted"],
  },
];

export const COMMANDS: CommandSpec[] = [
  {
    name: "init",
    about: "create an encrypted keystore (a new key) and a default policy",
    args: [],
    flags: [{ name: "fee-recipient", value: "<0x address>", about: "the address the policy lets the service fee go to (default: the local stack's)" }],
    details: ["The passphrase: SIGNER_PASSPHRASE, else asked (8 characters at least). An existing keystore is never overwritten."],
    prints: "the keystore, its address and the policy file (stdout)",
    examples: ["SIGNER_DIR=./my-agent signer-agent init --fee-recipient 0x000000000000000000000000000000000000fee5"],
  },
  {
    name: "address",
    about: "print the wallet's address (no passphrase needed)",
    args: [],
    flags: [],
    prints: "the address (stdout)",
    examples: ["signer-agent address"],
  },
  {
    name: "balance",
    about: "the wallet's ETH, USDC and Aave position on the chain (no passphrase needed)",
    args: [],
    flags: [JSON_FLAG],
    prints: "a summary (stdout), or with --json one JSON document",
    examples: ["signer-agent balance", "signer-agent balance --json"],
  },
  {
    name: "run",
    about: "ask the gateway for an action, check its envelope against what was asked and the policy, sign each step, relay it",
    args: [
      { name: "action", about: "one of the gateway's actions, below", choices: TREASURY_ACTIONS },
      {
        name: "amount",
        about: `how much: whole USDC (500 = 500 USDC) up to 6 decimals; in the asset's units for ${IN_UNITS.join("/")} of ETH or BTC; none for ${NO_AMOUNT.join(", ")}`,
        optional: true,
      },
    ],
    flags: [
      ...actionFlags().map((f) => ({ name: f.name, ...(f.choices ? { value: f.choices.join("|"), choices: f.choices } : {}), about: f.about })),
      BEARER,
      X402_SCHEME,
    ],
    details: [
      `Pays for the request with x402 (within the policy's price cap and daily budget) unless --bearer is given; a downward leg (${DOWNWARD.join(", ")}) signs in with the wallet instead, free.`,
      "With --x402-scheme session the first paid request deposits into a channel (20 requests' worth, at most what is left of the day's",
      "x402 budget) and each later one is paid by a voucher, no transaction; the next run continues the same channel.",
    ],
    prints: "`done: <action> <amount> ...` and the position on chain (stdout); each step on stderr",
    examples: [
      "SIGNER_PASSPHRASE=... signer-agent run deposit 500",
      "signer-agent run borrow 100 --x402-scheme session",
      "signer-agent run convert 250.5 --target eth",
      "signer-agent run withdraw 0.1 --asset eth",
    ],
  },
  {
    name: "register",
    about: "register a treasury for the agent's wallet: sign the gateway's ownership statement (EIP-712) with the agent's key, then POST /api/v1/treasuries",
    args: [],
    flags: [
      {
        name: "mode",
        value: "wallet|managed",
        choices: ["wallet", "managed"],
        about: "execution mode: wallet (the agent signs each envelope; default) or managed",
      },
      { name: "only-if-new", about: "refuse (exit 1, nothing registered) when the wallet already stands behind a treasury" },
    ],
    details: [
      "The gateway lets a wallet register again: each registration is a treasury of its own with its own API key, and the",
      "newest proven one is what the wallet's x402 payments and sign-ins act on from then on. A wallet that already has one",
      "(a `run` paid with x402 made one) is told so on stderr, naming it. The answer is also kept, with its key, in",
      "<dir>/treasury.json (mode 0600) for `signer-agent summary`.",
    ],
    prints: "the gateway's JSON answer (treasury_id, api_key, ...) on stdout and nothing else; progress and notes on stderr",
    examples: [
      'KEY=$(SIGNER_PASSPHRASE=... signer-agent register | node -p \'JSON.parse(require("fs").readFileSync(0,"utf8")).api_key\')',
      "signer-agent register --mode managed --only-if-new",
    ],
  },
  {
    name: "relay",
    about:
      "sign and relay an envelope the gateway already answered (a 202 of POST /api/v1/deposits, /convert, ...), checked against the policy as `run` checks its own; the amount it holds the envelope to is --amount, else the envelope's own",
    args: [{ name: "file", about: "the gateway's JSON answer, or - for stdin (default: stdin)", optional: true }],
    flags: [
      { name: "amount", value: "<amount>", about: "what you asked (default: the envelope's amount_usdc); required for ETH/BTC withdrawals and sales" },
      // the actions' own flags, from their declarations: the envelope does not say them
      ...actionFlags().map((f) => ({
        name: f.name,
        ...(f.choices ? { value: f.choices.join("|"), choices: f.choices } : {}),
        about: `${f.about}, as asked (the envelope does not say)${f.requiredBy.length ? `; required for ${f.requiredBy.join(", ")}` : ""}`,
      })),
    ],
    details: [
      "The envelope is checked against what it states (action, amount_usdc) and the flags given, then against the policy,",
      "so without --amount an envelope that states a larger amount consistently is held only to the policy's caps: pass --amount",
      "to hold it to what you asked.",
      "each step preflighted on the chain, signed with the local key and relayed (POST /api/v1/relay, one Idempotency-Key per step).",
      "Refused in plain words: an expired envelope (exit 3), a step outside the policy (exit 3), input that is not an envelope (exit 2).",
    ],
    prints: "the action's relay receipt as JSON on stdout (the last step's); each step on stderr",
    examples: ["signer-agent relay deposit.json", "curl ... | signer-agent relay -", "signer-agent relay convert.json --target eth"],
  },
  {
    name: "summary",
    about: "the treasury, the position, recent executions and fees paid, in one place",
    args: [],
    flags: [JSON_FLAG, BEARER],
    details: [
      "The treasury from <dir>/treasury.json (register) or the audit log, as the gateway states it (GET /api/v1/treasuries/{id});",
      "the position read on the chain; executions and fees from the audit log, and from the gateway's audit trail when a key is",
      "known (treasury.json, --bearer). Nothing is paid; no passphrase needed.",
    ],
    prints: "a human summary (stdout), or with --json one JSON document",
    examples: ["signer-agent summary", "signer-agent summary --json"],
  },
  {
    name: "serve",
    about: "a loopback-only signing endpoint for a co-located agent (POST /run, /sign, /address), guarded by SIGNER_SERVE_TOKEN",
    args: [],
    flags: [{ name: "port", value: "<port>", about: "the port on 127.0.0.1 (default 4030)" }, BEARER, X402_SCHEME],
    prints: "the endpoint and, without SIGNER_SERVE_TOKEN, the token made for it (stdout); runs until stopped",
    examples: ["SIGNER_SERVE_TOKEN=a-long-local-token signer-agent serve --port 4030"],
  },
  {
    name: "mcp",
    about:
      "the signer agent as an MCP server on stdio (protocol 2026-07-28 and 2025-11-25) for an LLM host: position, preview, each action, x402 budget, audit log",
    args: [],
    flags: [
      { name: "http", about: "serve on a loopback HTTP port instead, guarded by SIGNER_SERVE_TOKEN (as serve), Host and Origin checked" },
      { name: "port", value: "<port>", about: "with --http: the port on 127.0.0.1 (default 4031)" },
      BEARER,
      X402_SCHEME,
    ],
    details: [
      "stdout carries only MCP messages; progress goes to stderr. The key never appears in a tool's input, output or log.",
      "policy.json's confirm_above_usdc and confirm_actions make an action ask the person through the host first (docs/SIGNER-AGENT.md).",
    ],
    prints: "nothing but MCP messages on stdout; runs until the host closes stdin",
    examples: ["SIGNER_PASSPHRASE=... signer-agent mcp"],
  },
  {
    name: "where",
    about: "a URL of the running local stack (its stack file), else the default",
    args: [{ name: "what", about: "gateway (default), rpc, x402-rpc or facilitator", optional: true, choices: ["gateway", "rpc", "x402-rpc", "facilitator"] }],
    flags: [],
    prints: "the URL (stdout)",
    examples: ["GW=$(signer-agent where gateway)"],
  },
  {
    name: "operator",
    about: "the operator's managed treasury on a Safe: create, fund, register, approve or revoke delegation, propose and sign",
    args: [{ name: "subcommand", about: "one of the subcommands below" }],
    flags: [],
    details: [OPERATOR_NOTE],
    prints: "see each subcommand",
    examples: ["signer-agent operator create-safe", "signer-agent operator status --json"],
    subcommands: OPERATOR,
  },
  {
    name: "help",
    about: "this help, or a command's",
    args: [{ name: "command", about: "a command (and an operator subcommand)", optional: true }],
    flags: [],
    prints: "help (stdout)",
    examples: ["signer-agent help run", "signer-agent help operator approve"],
  },
];

export const commandNamed = (name: string): CommandSpec | undefined => COMMANDS.find((c) => c.name === name);
export const subcommandNamed = (group: CommandSpec, name: string): CommandSpec | undefined =>
  group.subcommands?.find((c) => c.name === `${group.name} ${name}`);
