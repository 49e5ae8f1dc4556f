/**
 * npm start: the whole local stack, with nothing but `npm install` before it.
 *
 *   Base fork        anvil, chain 8453, from fixtures/base-fork-state.json
 *                    (or `anvil --fork-url $BASE_FORK_URL` when that is set)   :8545
 *   Base Sepolia     anvil, chain 84532, TestUSDC at the real USDC address     :8546
 *   facilitator      the project's x402 facilitator (its own process)          :4021
 *   gateway          the treasury gateway, reading and relaying on the fork    :4020
 *   protection       the protection engine (automation key), watching managed Safes
 *
 * It funds a demo agent (Anvil dev account 3: public test keys, never real
 * funds), writes its encrypted keystore and policy under .data/agent, prints
 * every URL and account, and stops every child process on Ctrl-C.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createWalletClient, http, parseAbi, publicActions } from "viem";
import { base } from "viem/chains";
import { startAnvil, type AnvilNode } from "../fixtures/anvil";
import { forkManifest, fundOnFork, startBaseFork } from "../fixtures/base-fork";
import { DEV_MNEMONIC, devAccount, startBaseSepolia } from "../fixtures/base-sepolia";
import { createKeystore } from "../signer-agent/src/keystore";
import { defaultPolicy } from "../signer-agent/src/policy";
import { removeStackFile, stackFilePath, writeStackFile } from "../signer-agent/src/stack-file";
import { describeLocation } from "../gateway/src/store/db";
import type { RunningPostgres } from "./embedded-postgres";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const PORTS = {
  fork: Number(env.FORK_PORT ?? 8545),
  sepolia: Number(env.BASE_SEPOLIA_PORT ?? 8546),
  facilitator: Number(env.FACILITATOR_PORT ?? 4021),
  gateway: Number(env.PORT ?? 4020),
};
const DEMO_PASSPHRASE = "demo-passphrase-not-secret";
const hexKey = (i: number) => `0x${Buffer.from(devAccount(i).getHdKey().privateKey!).toString("hex")}` as `0x${string}`;

const children: ChildProcess[] = [];
const stopHooks: (() => Promise<void>)[] = [];

function instancesArg(): number {
  const i = process.argv.indexOf("--instances");
  const n = i >= 0 ? Number(process.argv[i + 1]) : Number(env.INSTANCES ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > 16) {
    process.stderr.write("--instances takes a whole number from 1 to 16\n");
    process.exit(2);
  }
  return n;
}
const nodes: AnvilNode[] = [];
let stopping = false;

async function stopAll(code: number) {
  if (stopping) return;
  stopping = true;
  process.stdout.write("\nstopping the local stack...\n");
  for (const c of children.reverse()) if (c.exitCode === null) c.kill("SIGTERM");
  await Promise.all(nodes.map((n) => n.stop()));
  for (const hook of stopHooks) await hook().catch(() => undefined);
  removeStackFile(stackFilePath(env));
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : Promise.resolve())));
  process.exit(code);
}
process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));

/**
 * Start a child and resolve once it logs `ready`. A child that dies before it
 * is ready stops the stack; with `supervise`, one that dies later (a crash, a
 * kill -9) is started again after a second, and the chains keep their state.
 */
function child(name: string, script: string, childEnv: Record<string, string>, ready: RegExp, supervise = false): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    let isReady = false;
    const c = spawn(process.execPath, ["--import", "tsx", script], { cwd: ROOT, env: { ...env, ...childEnv }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(c);
    let seen = "";
    const onData = (d: Buffer) => {
      const s = d.toString();
      if (!seen.includes("\u0000ready")) {
        seen += s;
        if (ready.test(seen)) {
          seen += "\u0000ready";
          isReady = true;
          resolve(c);
        }
      }
      if (env.STACK_VERBOSE) process.stdout.write(`[${name}] ${s}`);
    };
    c.stdout!.on("data", onData);
    c.stderr!.on("data", (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    c.once("exit", (code, signal) => {
      if (stopping) return;
      process.stderr.write(`${name} exited with ${code ?? signal}\n`);
      if (supervise && isReady) {
        children.splice(children.indexOf(c), 1);
        setTimeout(() => {
          if (stopping) return;
          process.stderr.write(`restarting ${name}\n`);
          child(name, script, childEnv, ready, true).then(
            () => process.stderr.write(`${name} is back\n`),
            () => undefined,
          );
        }, 1_000);
        return;
      }
      reject(new Error(`${name} exited`));
      void stopAll(1);
    });
  });
}

async function main() {
  const forkUrl = env.BASE_FORK_URL;
  const fork = forkUrl
    ? await startAnvil({ chainId: 8453, port: PORTS.fork, args: ["--fork-url", forkUrl, "--mnemonic", DEV_MNEMONIC] })
    : await startBaseFork({ port: PORTS.fork });
  nodes.push(fork);
  const sepolia = await startBaseSepolia({ port: PORTS.sepolia });
  nodes.push(sepolia);

  const agent = devAccount(3);
  const automation = devAccount(5);
  const operatorAccount = devAccount(6);
  const payTo = devAccount(2).address;
  const feeRecipient = devAccount(4).address;

  // fund the demo agent: USDC and ETH on the fork (TestUSDC's minter is dev account 0), USDC on Base Sepolia for x402
  if (!forkUrl) await fundOnFork(fork.rpcUrl, forkManifest().tokens.USDC, agent.address, 10_000_000_000n);
  await sepolia.fund(agent.address, 100_000_000n);

  const dataDir = path.resolve(env.DATA_DIR ?? path.join(ROOT, ".data"));
  const agentDir = path.join(dataDir, "agent");
  const keystore = path.join(agentDir, "keystore.json");
  if (!fs.existsSync(keystore)) await createKeystore(keystore, DEMO_PASSPHRASE, hexKey(3));
  const policyFile = path.join(agentDir, "policy.json");
  if (!fs.existsSync(policyFile)) fs.writeFileSync(policyFile, `${JSON.stringify(defaultPolicy([feeRecipient]), null, 2)}\n`);
  const operatorKeystore = path.join(dataDir, "operator", "keystore.json");
  if (!fs.existsSync(operatorKeystore)) await createKeystore(operatorKeystore, DEMO_PASSPHRASE, hexKey(6));

  await child("facilitator", "gateway/src/x402/facilitator/main.ts", {
    FACILITATOR_RPC_URL: sepolia.rpcUrl,
    FACILITATOR_PRIVATE_KEY: hexKey(1),
    FACILITATOR_PORT: String(PORTS.facilitator),
  }, /facilitator listening/);
  // --instances N: N gateways on PORT, PORT+1, ... sharing one PostgreSQL (DATABASE_URL, else an embedded one)
  const instances = instancesArg();
  let databaseUrl = env.DATABASE_URL;
  let postgres: RunningPostgres | undefined;
  if (instances > 1 && !databaseUrl) {
    // imported only here: embedded-postgres installs exit hooks of its own (they would change the stack's exit code)
    const { startEmbeddedPostgres } = await import("./embedded-postgres");
    postgres = await startEmbeddedPostgres({ dataDir: path.join(dataDir, "postgres"), port: Number(env.POSTGRES_PORT ?? 5433), persistent: true, database: "treasury" });
    stopHooks.push(() => postgres!.stop());
    databaseUrl = postgres.url;
  }
  const storeEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  for (let i = 0; i < instances; i++) {
    await child(instances > 1 ? `gateway-${i + 1}` : "gateway", "gateway/src/main.ts", {
      ...storeEnv,
      PORT: String(PORTS.gateway + i),
      DATA_DIR: dataDir,
    BASE_RPC_URL: fork.rpcUrl,
    X402_FACILITATOR: "local",
    X402_FACILITATOR_URL: `http://127.0.0.1:${PORTS.facilitator}`,
    X402_PAY_TO: payTo,
    FEE_RECIPIENT: feeRecipient,
    AUTOMATION_ADDRESS: automation.address,
    LOG_LEVEL: env.LOG_LEVEL ?? "info",
    }, /gateway listening/, true);
  }
  await child("protection", "gateway/src/protection/main.ts", {
    ...storeEnv,
    DATA_DIR: dataDir,
    BASE_RPC_URL: fork.rpcUrl,
    AUTOMATION_PRIVATE_KEY: hexKey(5),
    LOG_LEVEL: env.LOG_LEVEL ?? "info",
  }, /protection engine running/, true);

  const gw = `http://127.0.0.1:${PORTS.gateway}`;
  const stackFile = stackFilePath(env);
  writeStackFile(stackFile, {
    object: "local_stack",
    pid: process.pid,
    started_at: new Date().toISOString(),
    gateway_url: gw,
    gateway_urls: Array.from({ length: instances }, (_, i) => `http://127.0.0.1:${PORTS.gateway + i}`),
    fork_rpc_url: fork.rpcUrl,
    x402_rpc_url: sepolia.rpcUrl,
    facilitator_url: `http://127.0.0.1:${PORTS.facilitator}`,
    data_dir: dataDir,
    agent: { address: agent.address, dir: agentDir, keystore, policy: policyFile },
    operator: { address: operatorAccount.address, dir: path.dirname(operatorKeystore), keystore: operatorKeystore },
    accounts: { pay_to: payTo, fee_recipient: feeRecipient, automation: automation.address },
  });
  const shown = (p: string) => (path.relative(ROOT, p).startsWith("..") ? p : path.relative(ROOT, p));
  process.stdout.write(
    [
      "",
      "local stack running (Ctrl-C stops everything)",
      `  gateway       ${gw}   (API reference ${gw}/docs, MCP ${gw}/api/mcp)`,
      ...Array.from({ length: instances - 1 }, (_, i) => `  gateway ${i + 2}     http://127.0.0.1:${PORTS.gateway + i + 1}   (same store, any of them serves the whole loop)`),
      `  store         ${databaseUrl ? `PostgreSQL ${describeLocation({ url: databaseUrl })}${postgres ? " (embedded, data in .data/postgres)" : ""}` : `SQLite ${path.relative(ROOT, path.join(dataDir, "gateway.sqlite"))}`}`,
      `  Base fork     ${fork.rpcUrl}   chain 8453${forkUrl ? ` (forking ${forkUrl})` : " (offline fixture: real Aave V3 at the real addresses)"}`,
      `  Base Sepolia  ${sepolia.rpcUrl}   chain 84532 (x402 payments, USDC ${sepolia.usdc})`,
      `  facilitator   http://127.0.0.1:${PORTS.facilitator}   (settles from ${devAccount(1).address})`,
      "",
      "accounts (Anvil's public development keys; never use them for real funds)",
      `  demo agent    ${agent.address}   10,000 USDC + ETH on the fork, 100 USDC on Base Sepolia`,
      `                keystore ${shown(keystore)}, passphrase "${DEMO_PASSPHRASE}"`,
      `  x402 pay-to   ${payTo}`,
      `  fee recipient ${feeRecipient}`,
      `  automation    ${automation.address}   (the protection engine's key; never a Safe owner)`,
      `  operator      ${operatorAccount.address}   ETH on the fork; keystore ${shown(operatorKeystore)}, same passphrase`,
      "",
      `where it runs: ${shown(stackFile)} (the signer-agent commands below read their defaults from it)`,
      "try, in a second terminal (in this directory):",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent run deposit 500`,
      "a managed treasury on a Safe (README: operator walk-through):",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent operator create-safe   # then: operator fund 10 --borrow 15000, register, approve`,
      "",
    ].join("\n"),
  );
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  void stopAll(1);
});
