/**
 * `signer-agent operator` from the command line on a real offline Base fork
 * and a real gateway: the commands that take seconds say each step on stderr
 * while stdout carries only the answer; `operator status` prints a summary a
 * person reads, and with --json exactly one JSON document a script parses.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { createKeystore } from "../../signer-agent/src/keystore";
import { textArtefacts } from "../helpers/figures";
import { startTestGateway, type TestGateway } from "../helpers/gateway";

const ROOT = path.resolve(__dirname, "../..");
const PASSPHRASE = "operator-passphrase-not-secret";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "operator-cli-"));
const privateKey = generatePrivateKey();
let fork: BaseForkNode;
let gw: TestGateway;
const printed: string[] = [];

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: devAccount(7).address });
  await createKeystore(path.join(dir, "keystore.json"), PASSPHRASE, privateKey);
  await fork.fund(privateKeyToAccount(privateKey).address);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

function operator(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_)/.test(k)));
    const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), "operator", ...args], {
      cwd: ROOT,
      env: {
        ...clean,
        STACK_FILE: path.join(dir, "no-stack.json"),
        OPERATOR_DIR: dir,
        SIGNER_PASSPHRASE: PASSPHRASE,
        SIGNER_GATEWAY_URL: gw.url,
        SIGNER_RPC_URL: fork.rpcUrl,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("exit", (code) => {
      printed.push(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

/** a progress line: the seconds since the command started, then the step */
const step = (text: string) => new RegExp(`^\\[ *\\d+\\.\\ds\\] ${text}`, "m");

describe("operator commands that take seconds say each step on stderr", () => {
  it("create-safe, fund and register: a line per step on stderr, the answer alone on stdout", async () => {
    const safe = await operator(["create-safe"]);
    expect(safe.code, safe.stderr).toBe(0);
    expect(safe.stdout).toMatch(/^Safe 0x[0-9a-fA-F]{40} created, owned by 0x[0-9a-fA-F]{40} \(threshold 1\)\n$/);
    expect(safe.stderr).toMatch(step("deploying the Safe at 0x[0-9a-fA-F]{40} \\(one transaction"));
    expect(safe.stderr).toMatch(step("waiting for the deployment's receipt"));

    const fund = await operator(["fund", "0.5", "--borrow", "300"]);
    expect(fund.code, fund.stderr).toBe(0);
    expect(fund.stdout).toBe("supplied 0.5 WETH and borrowed 300 USDC through the Safe\n");
    for (const s of [
      "connecting to the Safe",
      "wrapping the operator's ETH into WETH",
      "sending the WETH to the Safe",
      "supplying the WETH to Aave through the Safe",
      "borrowing the USDC through the Safe",
    ])
      expect(fund.stderr).toMatch(step(s));

    const register = await operator(["register"]);
    expect(register.code, register.stderr).toBe(0);
    expect(register.stdout).toMatch(/^managed treasury trs_[0-9a-f]{32} registered; its key is kept in .*operator\.json\n$/);
    expect(register.stderr).toMatch(step("registering the managed treasury"));
  }, 120_000);
});

describe("operator status", () => {
  it("prints a summary by default, and with --json one JSON document {delegation, health}", async () => {
    const text = await operator(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^Safe +0x[0-9a-fA-F]{40}$/m);
    expect(text.stdout).toMatch(/^delegation +not_granted, no module attached/m);
    expect(text.stdout).toMatch(/^health +\d+(\.\d+)?, LTV \d+(\.\d{1,2})?% \(zone \w+\), read on base at block \d+$/m);
    const json = await operator(["status", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({
      object: "operator_status",
      delegation: { object: "delegation", state: "not_granted", module: null },
      health: { object: "health_state", environment: "chain" },
    });
    expect(doc.safe).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(doc.treasury_id).toBe(doc.delegation.treasury_id);
  }, 60_000);

  it("no figure it printed carries float artefacts", () => {
    expect(textArtefacts(printed.join("\n"))).toEqual([]);
  });
});
