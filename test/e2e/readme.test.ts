/**
 * The README as written: a stack on non-default ports (and its own data
 * directory and stack file), then every command the stack prints under "try"
 * and every README block marked `<!-- quickstart -->`, run by bash exactly as
 * they stand. Also: the configuration table has one well-formed row per
 * variable the gateway reads.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { specSandboxFlow } from "../helpers/spec-flow";

const ROOT = path.resolve(__dirname, "../..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

/** the sh blocks that follow a `<!-- quickstart` marker */
function quickstartBlocks(): string[] {
  const blocks: string[] = [];
  const re = /<!-- quickstart[^>]*-->\s*```sh\n([\s\S]*?)```/g;
  for (let m = re.exec(README); m; m = re.exec(README)) blocks.push(m[1]!);
  return blocks;
}

describe("the README's configuration table", () => {
  it("has exactly one row of three cells for every variable gateway/src/config.ts reads", () => {
    const config = fs.readFileSync(path.join(ROOT, "gateway/src/config.ts"), "utf8");
    const schema = config.slice(config.indexOf("const envSchema"), config.indexOf("export interface Config"));
    const names = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(20);
    const section = README.slice(README.indexOf("## Configuration"), README.indexOf("\n## ", README.indexOf("## Configuration") + 5));
    const rows = section.split("\n").filter((l) => l.startsWith("| `"));
    for (const row of rows) expect(row.split(/(?<!\\)\|/).length - 2, row).toBe(3);
    for (const name of names) {
      const own = rows.filter((r) => r.split("|")[1]!.includes(`\`${name}\``));
      expect(own.length, name).toBe(1);
    }
  });
});

// the stack's store does not change with TEST_STORE: this runs once, in the SQLite pass
describe.skipIf(process.env.TEST_STORE === "postgres")("the README's quick start, as written, on non-default ports", () => {
  it("every printed 'try' command and every quickstart block exits 0 with what the README says", async () => {
    const blocks = quickstartBlocks();
    expect(blocks.length).toBe(3);
    const [fork, sepolia, facilitator, gateway] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "readme-stack-"));
    const stackFile = path.join(dataDir, "stack.json");
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_|FORK_|PORT$|DATA_DIR$|DATABASE_URL$)/.test(k)));
    const env = { ...clean, STACK_FILE: stackFile };
    const stack = spawn(process.execPath, ["scripts/start.mjs"], {
      cwd: ROOT,
      env: { ...env, FORK_PORT: String(fork), BASE_SEPOLIA_PORT: String(sepolia), FACILITATOR_PORT: String(facilitator), PORT: String(gateway), DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    stack.stdout.on("data", (d) => (out += d));
    stack.stderr.on("data", (d) => (out += d));
    const run = (script: string) => {
      const r = spawnSync("bash", ["-e", "-c", script], { cwd: ROOT, env, encoding: "utf8", timeout: 120_000 });
      return { code: r.status, out: `${r.stdout}${r.stderr}` };
    };
    try {
      for (let i = 0; i < 600 && !out.includes("local stack running"); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out, out).toContain("local stack running");
      expect(JSON.parse(fs.readFileSync(stackFile, "utf8"))).toMatchObject({ gateway_url: `http://127.0.0.1:${gateway}`, fork_rpc_url: `http://127.0.0.1:${fork}` });
      // the printed paths are the real ones
      expect(out).toContain(`keystore ${path.join(dataDir, "operator", "keystore.json")}`);
      // the console's URL, and it serves
      expect(out).toContain(`console       http://127.0.0.1:${gateway}/console`);
      expect((await fetch(`http://127.0.0.1:${gateway}/console`)).status).toBe(200);

      const tries = out.slice(out.indexOf("try, in a second terminal")).split("\n").filter((l) => /^ {2}SIGNER_PASSPHRASE=/.test(l));
      expect(tries.length).toBe(2);
      for (const line of tries) {
        const r = run(line.trim());
        expect(r.code, `${line}\n${r.out}`).toBe(0);
      }

      const [agentBlock, curlBlock, operatorBlock] = blocks as [string, string, string];
      const agent = run(agentBlock);
      expect(agent.code, agent.out).toBe(0);
      expect(agent.out).toContain("done: deposit 500 USDC");
      expect(agent.out).toContain("done: borrow 100 USDC");
      expect(agent.out).toContain("confirmed on chain");

      const curls = run(curlBlock);
      expect(curls.code, curls.out).toBe(0);
      expect(curls.out).toContain('"status":"online"');
      expect(curls.out).toContain('"error":"ltv_limit_exceeded"');
      expect(curls.out).toContain('"key":"sk_test_');

      const operator = run(operatorBlock);
      expect(operator.code, operator.out).toBe(0);
      expect(operator.out).toContain("delegation approved");
      expect(operator.out).toMatch(/borrow 100 USDC: receipt brw_[0-9a-f]{32} approved; Safe transaction stx_/);
      expect(operator.out).toMatch(/executed stx_[0-9a-f]{32} in 0x[0-9a-f]{64}; receipt brw_[0-9a-f]{32} completed/);
      expect(operator.out).toContain("delegation revoked");

      // the spec's sandbox flow on this stack, for brand-new wallets, in both modes, with only the spec's requests
      const flow = { gatewayUrl: `http://127.0.0.1:${gateway}`, rpcUrl: `http://127.0.0.1:${fork}` };
      const managed = await specSandboxFlow(flow, "managed");
      expect([managed.deposit.status, managed.convert.status, managed.borrow.status, managed.repay.status]).toEqual(["processing", "processing", "approved", "completed"]);
      const wallet = await specSandboxFlow(flow, "wallet");
      expect(wallet.repay).toMatchObject({ status: "confirmed", simulated: false, result: { action: "repay", sequence_complete: true } });
    } finally {
      const exited = new Promise<number | null>((r) => stack.once("exit", (code) => r(code)));
      stack.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
    // the stack removed its file when it stopped
    expect(fs.existsSync(stackFile)).toBe(false);
  }, 300_000);
});
