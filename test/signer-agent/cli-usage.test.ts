/**
 * The signer agent's command line explains itself, with no stack running: the
 * CLI spawned as a person runs it (bin/signer-agent.mjs). Help for the tool and
 * each command (arguments, units, an example, exit codes), the actions derived
 * from the gateway's declarations; a usage error names the argument at fault
 * and why (exit 2); a keystore that cannot be opened is said in plain words.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DECLARED } from "@treasury/core/actions";
import { createKeystore } from "../../signer-agent/src/keystore";

const ROOT = path.resolve(__dirname, "../..");
const EMPTY = fs.mkdtempSync(path.join(os.tmpdir(), "agent-usage-"));
// no stack file, no agent directory: the defaults alone
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_)/.test(k)));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), ...args], {
      cwd: ROOT,
      env: {
        ...ENV,
        STACK_FILE: path.join(EMPTY, "no-stack.json"),
        SIGNER_DIR: path.join(EMPTY, "agent"),
        OPERATOR_DIR: path.join(EMPTY, "operator"),
        SIGNER_GATEWAY_URL: "http://127.0.0.1:9",
        SIGNER_RPC_URL: "http://127.0.0.1:9",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** several command lines at once (each is its own process), at most three at a time on a shared machine */
async function all(lines: string[][], env?: Record<string, string>): Promise<Ran[]> {
  const results: Ran[] = [];
  for (let i = 0; i < lines.length; i += 3) results.push(...(await Promise.all(lines.slice(i, i + 3).map((l) => cli(l, env)))));
  return results;
}

describe("help", () => {
  it("the tool's --help lists every command, every action the gateway declares with its summary and an example, amounts' units and the exit codes", async () => {
    const [long, bare, word] = await all([["--help"], [], ["help"]]);
    for (const r of [long!, bare!, word!]) expect(r.code).toBe(0);
    expect(bare!.stdout).toBe(long!.stdout);
    expect(word!.stdout).toBe(long!.stdout);
    const text = long!.stdout;
    for (const c of ["init", "address", "balance", "run", "register", "relay", "summary", "serve", "where", "operator"])
      expect(text).toMatch(new RegExp(`^  ${c} `, "m"));
    // the actions are the declarations', with their own usage and summary, never restated
    for (const d of DECLARED) {
      expect(text).toContain(d.cli.usage);
      expect(text).toContain(d.route.summary);
    }
    expect(text).toContain("e.g. signer-agent run convert 500 --target eth");
    expect(text).toContain("500 means 500 USDC; decimals allowed up to 6 places");
    expect(text).toContain("2 usage error");
    expect(text).toContain("3 refused");
  }, 60_000);

  it("each command's help (help <command>, <command> --help, -h) states its arguments, units, flags, what it prints and an example", async () => {
    const [helpRun, runHelp, runH, op, opApprove, helpOpApprove, relay, register, summary, status] = await all([
      ["help", "run"],
      ["run", "--help"],
      ["run", "-h"],
      ["operator", "--help"],
      ["operator", "approve", "--help"],
      ["help", "operator", "approve"],
      ["relay", "--help"],
      ["register", "--help"],
      ["summary", "--help"],
      ["operator", "status", "--help"],
    ]);
    for (const r of [helpRun, runHelp, runH, op, opApprove, helpOpApprove, relay, register, summary, status]) expect(r!.code, r!.stderr).toBe(0);
    expect(runHelp!.stdout).toBe(helpRun!.stdout);
    expect(runH!.stdout).toBe(helpRun!.stdout);
    expect(helpRun!.stdout).toMatch(/^usage: signer-agent run <action> \[<amount>\] \[flags\]/);
    expect(helpRun!.stdout).toContain("<amount>  how much: whole USDC (500 = 500 USDC) up to 6 decimals");
    expect(helpRun!.stdout).toContain("--target btc|eth");
    expect(helpRun!.stdout).toContain("e.g. signer-agent run withdraw 0.5 --asset eth");
    expect(helpRun!.stdout).toContain("exit codes: 0 done; 1 failed");
    for (const sub of ["create-safe", "fund", "register", "approve", "revoke", "propose", "queue", "sign", "status"])
      expect(op!.stdout).toContain(`operator ${sub}`);
    expect(opApprove!.stdout).toBe(helpOpApprove!.stdout);
    expect(opApprove!.stdout).toContain("--protect-below <health>");
    expect(opApprove!.stdout).toContain("examples:\n  signer-agent operator approve");
    expect(relay!.stdout).toContain("<file>  the gateway's JSON answer, or - for stdin");
    expect(relay!.stdout).toContain("an expired envelope (exit 3)");
    expect(register!.stdout).toContain("--mode wallet|managed");
    expect(register!.stdout).toContain("The gateway lets a wallet register again");
    expect(summary!.stdout).toContain("--json");
    expect(status!.stdout).toContain("print one JSON document {delegation, health} instead of the summary");
  }, 90_000);
});

describe("usage errors: the argument at fault, and why (exit 2)", () => {
  const cases: [string[], RegExp][] = [
    [["run", "deposit", "500usdc"], /^signer-agent run: amount "500usdc" is not a number of USDC: write 500 \(whole USDC, up to 6 decimals\)$/m],
    [["run", "deposit", "1,000"], /amount "1,000" is not a number of USDC: write 1000 \(no thousands separators; whole USDC, up to 6 decimals\)/],
    [["run", "deposit", "0.1234567"], /amount "0.1234567" has 7 decimals: USDC amounts take at most 6 \(write 0.123456\)/],
    [["run", "deposit", "-5"], /amount "-5" is negative/],
    [["run", "depositt", "5"], /unknown action "depositt" \(did you mean deposit\?\); one of: deposit, convert, borrow/],
    [["run", "deposit"], /missing <amount_usdc>: how much to deposit, in whole USDC/],
    [["run"], /missing <action>/],
    [["run", "convert", "500"], /convert needs --target btc\|eth/],
    [["run", "convert", "500", "--target", "sol"], /--target "sol" is not one of btc\|eth/],
    [["run", "deposit", "500", "--target", "eth"], /--target does not apply to deposit/],
    [["run", "deposit", "500", "--targe", "eth"], /unknown flag --targe \(did you mean --target\?\)/],
    [["run", "exit", "5"], /exit takes no amount \("5"\)/],
    [["frobnicate"], /unknown command "frobnicate"; the commands: init, address/],
    [["operator", "frob"], /unknown operator subcommand "frob"; the subcommands: create-safe/],
    [["operator"], /missing <subcommand>: one of create-safe/],
    [["operator", "fund", "1.5weth"], /<weth> "1.5weth" is not a number of WETH: write 1.5 /],
    [["run", "deposit", "1e3"], /amount "1e3" is not a number of USDC: write digits with at most one point, e.g. 500/],
    [["summary", "--json=yes"], /--json takes no value/],
    [["address", "extra"], /address takes no arguments; "extra" is one too many/],
    [["relay", "--amount", "1,5"], /--amount "1,5" is not a number of USDC: write 1.5 \(a point for decimals/],
  ];
  it("each names what is wrong, shows the command's usage on stderr, prints nothing on stdout", async () => {
    const results = await all(cases.map(([args]) => args));
    results.forEach((r, i) => {
      const [args, message] = cases[i]!;
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stderr).toMatch(/^more: signer-agent .*--help$/m);
      expect(r.stdout).toBe("");
    });
  }, 120_000);

  it("relay of something that is not an envelope says what it is", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-not-envelope-"));
    const refusal = path.join(dir, "refusal.json");
    fs.writeFileSync(refusal, JSON.stringify({ error: "ltv_limit_exceeded", message: "the borrow would take LTV above the ceiling", safe_amount: 0 }));
    const text = path.join(dir, "notes.txt");
    fs.writeFileSync(text, "deposit 500 please");
    const [a, b, c] = await all([
      ["relay", refusal],
      ["relay", text],
      ["relay", path.join(dir, "missing.json")],
    ]);
    expect(a!.code).toBe(2);
    expect(a!.stderr).toContain(
      `${refusal} is the gateway's error answer ltv_limit_exceeded ("the borrow would take LTV above the ceiling"), not an envelope: nothing to sign`,
    );
    expect(b!.code).toBe(2);
    expect(b!.stderr).toContain(`${text} is not JSON (it starts "deposit 500 please")`);
    expect(c!.code).toBe(2);
    expect(c!.stderr).toContain(`no file "${path.join(dir, "missing.json")}"`);
  }, 60_000);
});

describe("the keystore, in plain words", () => {
  it("a wrong passphrase is said so, naming the keystore (no ethers text, no key); a missing keystore says to run init (exit 1)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-keystore-"));
    const keystore = path.join(dir, "keystore.json");
    await createKeystore(keystore, "the-right-passphrase");
    const [wrong, missing, address] = await all(
      [
        ["run", "deposit", "100", "--keystore", keystore],
        ["run", "deposit", "100"],
        ["address", "--keystore", keystore],
      ],
      { SIGNER_PASSPHRASE: "not-the-passphrase" },
    );
    expect(wrong!.code).toBe(1);
    expect(wrong!.stderr.trim()).toBe(`signer-agent run: the passphrase does not open the keystore at ${keystore} (SIGNER_PASSPHRASE)`);
    expect(wrong!.stderr).not.toMatch(/INVALID_ARGUMENT|incorrect password/);
    expect(missing!.code).toBe(1);
    expect(missing!.stderr).toContain(`no keystore at ${path.join(EMPTY, "agent", "keystore.json")}: create one with \`signer-agent init\``);
    // the address is in the clear: no passphrase needed
    expect(address!.code).toBe(0);
    expect(address!.stdout.trim()).toMatch(/^0x[0-9a-fA-F]{40}$/);
  }, 60_000);
});
