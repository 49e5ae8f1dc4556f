/**
 * The README and the docs as written.
 *
 * - README.md is a front door: 181 lines when this test was last changed; it must stay under
 *   README_MAX_LINES. Every code block of it is `sh` or `ts` (run) or `text` (not run).
 * - A stack on non-default ports (its own data directory and stack file, started by `npm start`'s entry),
 *   then every command the stack prints under "try", every README block, and every docs block marked
 *   `<!-- quickstart -->`, as written: sh with bash, ts saved to a temporary .ts file inside the repository
 *   (so its imports resolve) and run with `npx tsx`. Each must exit 0 and print what the text around it
 *   says it prints (EXPECTED). GATEWAY_URL and STACK_FILE are the only things the test sets for them.
 * - docs/CONFIGURATION.md has one well-formed row per variable gateway/src/config.ts reads.
 * - docs/API.md's tool table lists exactly the tools the server lists (`tools/list`).
 * - Every relative link of the README, docs/ and bench/README.md reaches a file inside the repository.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { call, startTestGateway } from "../helpers/gateway";
import { specSandboxFlow, specUnprovenWalletDeposit } from "../helpers/spec-flow";

const ROOT = path.resolve(__dirname, "../..");
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), "utf8");
const README_MAX_LINES = 200;
const DOCS = fs
  .readdirSync(path.join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);

interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
  /** preceded by `<!-- quickstart ... -->` */
  marked: boolean;
}

/** the fenced code blocks of a markdown file */
function blocksOf(file: string): Block[] {
  const text = read(file);
  const blocks: Block[] = [];
  const re = /^```([\w-]*)\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const before = text.slice(0, m.index).trimEnd();
    const lastLine = before.slice(before.lastIndexOf("\n") + 1);
    blocks.push({ file, line: before.split("\n").length + 1, lang: m[1]!, code: m[2]!, marked: /^<!-- quickstart\b.*-->$/.test(lastLine) });
  }
  return blocks;
}

const RUNNABLE = new Set(["sh", "bash", "ts"]);
/** every block the test runs: all of the README's runnable blocks, the docs' marked ones */
const runnable = (): Block[] =>
  [...blocksOf("README.md"), ...DOCS.flatMap(blocksOf)].filter((b) => RUNNABLE.has(b.lang) && (b.file === "README.md" || b.marked));

/**
 * What each block prints, as the text around it says; run in this order (the operator's walk-through moves
 * the fork's WETH price, so it comes last). Every block that runs has exactly one entry.
 */
const EXPECTED: { file: string; has: string; prints: (string | RegExp)[] }[] = [
  { file: "README.md", has: "npx signer-agent run deposit 500", prints: ["done: deposit 500 USDC", "done: borrow 100 USDC", "confirmed on chain"] },
  {
    file: "README.md",
    has: "/api/v1/public/gateway-status",
    prints: ['"status":"online"', '"error":"ltv_limit_exceeded"', '"safe_amount":6000', '"key":"sk_test_'],
  },
  {
    file: "README.md",
    has: 'from "x402-fetch"',
    prints: [/^200 \{/m, "object: 'action_preview'", "service_fee_usdc: 20", "success: true", "network: 'base-sepolia'"],
  },
  { file: "README.md", has: 'from "@x402/fetch"', prints: [/^200 \{/m, "object: 'health_state'", "success: true", "network: 'eip155:84532'"] },
  // `signer-agent register` and `signer-agent relay` print the gateway's JSON answers
  { file: "README.md", has: "npx signer-agent register", prints: [/"status":\s*"confirmed"/, /"simulated":\s*false/, /"tx_hash":\s*"0x[0-9a-f]{64}"/] },
  {
    file: "docs/API.md",
    has: "@x402/evm/batch-settlement/client",
    prints: [
      /^call 1: 200, charged so far \d+$/m,
      /^call 3: 200, charged so far \d+$/m,
      /^receipt for GET \/api\/v1\/health, paid by 0x90F79bf6EB2c4f870365E785982E1f101E93b906$/im,
    ],
  },
  { file: "docs/API.md", has: "@x402/evm/upto/client", prints: [/^200: \d+ entries, charged \d+ of at most 1300$/m] },
  { file: "docs/API.md", has: '"method":"tools/list"', prints: ['"tools":[', '"name":"prepare_deposit"'] },
  {
    file: "docs/API.md",
    has: "@modelcontextprotocol/client",
    prints: [/^\d+ tools$/m, "object: 'health_state'", "ltv: 40", "isError: true {", "error: 'ltv_limit_exceeded'", "safe_amount: 12000", "http_status: 403"],
  },
  {
    file: "docs/SIGNER-AGENT.md",
    has: "@modelcontextprotocol/client/stdio",
    prints: [
      /^11 tools$/m,
      "3 receipts, the last confirmed",
      "gateway_error: 'ltv_limit_exceeded'",
      "is asked to sign a deposit of 5000 USDC, because 5000 USDC is above the policy's confirm_above_usdc of 1000",
      "error: 'declined'",
      "address: '0x90F79bf6EB2c4f870365E785982E1f101E93b906'",
    ],
  },
  {
    file: "docs/OPERATOR.md",
    has: "npx signer-agent operator create-safe",
    prints: [
      "delegation approved",
      /borrow 100 USDC: receipt brw_[0-9a-f]{32} approved; Safe transaction stx_/,
      /executed stx_[0-9a-f]{32} in 0x[0-9a-f]{64}; receipt brw_[0-9a-f]{32} completed/,
      /\d+ protection\.acted: repaid \d+(\.\d+)? USDC through the module \(health 1\.\d+ before\), LTV 2\d(\.\d+)?% after, \d transactions?, gas \d+\.\d\d USD/,
      "delegation revoked",
    ],
  },
];
const expectationOf = (b: Block) => EXPECTED.filter((e) => e.file === b.file && b.code.includes(e.has));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

/** run a command without blocking the event loop (the stack's output keeps draining meanwhile) */
function runCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 180_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
    c.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? -1 : null), out });
    });
  });
}

describe("the README and the docs, read", () => {
  it(`README.md is a front door: under ${README_MAX_LINES} lines`, () => {
    expect(read("README.md").split("\n").length).toBeLessThan(README_MAX_LINES);
  });

  it("every README block runs (sh or ts) or says it does not (text); every runnable docs block is marked and run", () => {
    for (const b of blocksOf("README.md")) expect(["sh", "ts", "text"], `README.md:${b.line} is \`${b.lang || "(no language)"}\``).toContain(b.lang);
    for (const b of DOCS.flatMap(blocksOf)) if (RUNNABLE.has(b.lang)) expect(b.marked, `${b.file}:${b.line} runs but is not marked quickstart`).toBe(true);
    const blocks = runnable();
    for (const b of blocks) {
      expect(expectationOf(b).length, `${b.file}:${b.line}: one entry of EXPECTED`).toBe(1);
      // no tool a stock machine lacks
      expect(b.code, `${b.file}:${b.line}`).not.toMatch(/\b(jq|uuidgen)\b/);
    }
    for (const e of EXPECTED) expect(blocks.filter((b) => b.file === e.file && b.code.includes(e.has)).length, `${e.file}: a block with ${e.has}`).toBe(1);
  });

  it("docs/CONFIGURATION.md has exactly one row of three cells for every variable gateway/src/config.ts reads", () => {
    const config = read("gateway/src/config.ts");
    const schema = config.slice(config.indexOf("const envSchema"), config.indexOf("export interface Config"));
    const names = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(20);
    const doc = read("docs/CONFIGURATION.md");
    const start = doc.indexOf("## The gateway");
    expect(start).toBeGreaterThanOrEqual(0);
    const section = doc.slice(start, doc.indexOf("\n## ", start + 5));
    const rows = section.split("\n").filter((l) => l.startsWith("| `"));
    for (const row of rows) expect(row.split(/(?<!\\)\|/).length - 2, row).toBe(3);
    for (const name of names) {
      const own = rows.filter((r) => r.split("|")[1]!.includes(`\`${name}\``));
      expect(own.length, name).toBe(1);
    }
  });

  it("docs/API.md lists every MCP tool the server lists, and no other", async () => {
    const gw = await startTestGateway();
    try {
      const r = await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
      expect(r.status).toBe(200);
      const served = (r.body.result.tools as { name: string }[]).map((t) => t.name).sort();
      expect(served.length).toBeGreaterThan(10);
      const doc = read("docs/API.md");
      const start = doc.indexOf("### Tools");
      expect(start).toBeGreaterThanOrEqual(0);
      const table = doc.slice(start, doc.indexOf("\n\n", doc.indexOf("| Tool |", start)));
      const listed = table
        .split("\n")
        .filter((l) => l.startsWith("| `"))
        .map((l) => /^\| `([a-z_]+)`/.exec(l)![1]!)
        .sort();
      expect(listed).toEqual(served);
    } finally {
      await gw.close();
    }
  });

  it("every relative link of the README, docs/ and bench/README.md reaches a file inside the repository", () => {
    for (const file of ["README.md", "bench/README.md", ...DOCS]) {
      for (const m of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split("#")[0]!;
        if (!target || /^[a-z]+:/.test(target)) continue;
        const abs = path.resolve(ROOT, path.dirname(file), target);
        expect(abs.startsWith(`${ROOT}${path.sep}`), `${file}: ${m[1]} leaves the repository`).toBe(true);
        expect(fs.existsSync(abs), `${file}: ${m[1]}`).toBe(true);
      }
    }
  });
});

// the stack's store does not change with TEST_STORE: this runs once, in the SQLite pass
describe.skipIf(process.env.TEST_STORE === "postgres")("the README's tour and the docs' quickstart blocks, as written, on non-default ports", () => {
  it("every printed 'try' command and every block exits 0 and prints what the text says", async () => {
    const blocks = EXPECTED.map((e) => runnable().find((b) => b.file === e.file && b.code.includes(e.has))!);
    expect(blocks.every(Boolean)).toBe(true);
    const [fork, sepolia, facilitator, gateway] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "readme-stack-"));
    const stackFile = path.join(dataDir, "stack.json");
    const gatewayUrl = `http://127.0.0.1:${gateway}`;
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_|FORK_|PORT$|DATA_DIR$|DATABASE_URL$|GATEWAY_URL$)/.test(k)),
    );
    const env = { ...clean, STACK_FILE: stackFile };
    const stack = spawn(process.execPath, ["scripts/start.mjs"], {
      cwd: ROOT,
      env: {
        ...env,
        FORK_PORT: String(fork),
        BASE_SEPOLIA_PORT: String(sepolia),
        FACILITATOR_PORT: String(facilitator),
        PORT: String(gateway),
        DATA_DIR: dataDir,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    stack.stdout.on("data", (d) => (out += d));
    stack.stderr.on("data", (d) => (out += d));
    // the blocks' environment: the stack's file (the signer agent and its `where`), and GATEWAY_URL (the ts blocks)
    const blockEnv = { ...env, GATEWAY_URL: gatewayUrl };
    const sh = (script: string) => runCommand("bash", ["-e", "-o", "pipefail", "-c", script], blockEnv);
    // ts blocks are saved inside the repository, so that their imports resolve as they do for a reader
    fs.mkdirSync(path.join(ROOT, "test-results"), { recursive: true });
    const tsDir = fs.mkdtempSync(path.join(ROOT, "test-results", "readme-blocks-"));
    try {
      for (let i = 0; i < 600 && !out.includes("local stack running"); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out, out).toContain("local stack running");
      expect(JSON.parse(fs.readFileSync(stackFile, "utf8"))).toMatchObject({ gateway_url: gatewayUrl, fork_rpc_url: `http://127.0.0.1:${fork}` });
      // the printed paths are the real ones
      expect(out).toContain(`keystore ${path.join(dataDir, "operator", "keystore.json")}`);
      // the console's URL, and it serves
      expect(out).toContain(`console       ${gatewayUrl}/console`);
      expect((await fetch(`${gatewayUrl}/console`)).status).toBe(200);

      // every printed "try" command and every block, each checked; a failure is reported with the others' outcomes
      const failures: string[] = [];
      const tries = out
        .slice(out.indexOf("try, in a second terminal"))
        .split("\n")
        .filter((l) => /^ {2}SIGNER_PASSPHRASE=/.test(l));
      expect(tries.length).toBe(2);
      for (const line of tries) {
        const r = await sh(line.trim());
        if (r.code !== 0) failures.push(`printed try line exited ${r.code}: ${line.trim()}\n${r.out.slice(-3000)}`);
      }
      for (const [i, b] of blocks.entries()) {
        let r: { code: number | null; out: string };
        if (b.lang === "ts") {
          const file = path.join(tsDir, `block-${i}.ts`);
          fs.writeFileSync(file, b.code);
          r = await runCommand("npx", ["tsx", file], blockEnv);
        } else r = await sh(b.code);
        const missing = EXPECTED[i]!.prints.filter((p) => (typeof p === "string" ? !r.out.includes(p) : !p.test(r.out)));
        if (r.code !== 0 || missing.length > 0)
          failures.push(
            `${b.file}:${b.line} (${b.lang}) exited ${r.code}${missing.length ? `, missing ${missing.map(String).join(", ")}` : ""}\n${r.out.slice(-3000)}`,
          );
      }

      // the spec's sandbox flow on this stack, for brand-new wallets, in both modes, with only the spec's requests
      const flow = { gatewayUrl, rpcUrl: `http://127.0.0.1:${fork}` };
      const managed = await specSandboxFlow(flow, "managed");
      expect([managed.deposit.status, managed.convert.status, managed.borrow.status, managed.repay.status]).toEqual([
        "processing",
        "processing",
        "approved",
        "completed",
      ]);
      const wallet = await specSandboxFlow(flow, "wallet");
      expect(wallet.repay).toMatchObject({ status: "confirmed", simulated: false, result: { action: "repay", sequence_complete: true } });
      // a wallet that has proven nothing (no ownership_proof): its envelope, every step signed with viem, confirmed
      const unproven = await specUnprovenWalletDeposit(flow, 1000);
      expect(unproven.receipt).toMatchObject({ object: "relay_receipt", status: "confirmed", simulated: false, result: { action: "deposit" } });

      expect(failures, failures.join("\n\n")).toEqual([]);
    } finally {
      fs.rmSync(tsDir, { recursive: true, force: true });
      const exited = new Promise<number | null>((r) => stack.once("exit", (code) => r(code)));
      stack.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
    // the stack removed its file when it stopped
    expect(fs.existsSync(stackFile)).toBe(false);
  }, 480_000);
});
