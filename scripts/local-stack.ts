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
const nodes: AnvilNode[] = [];
let stopping = false;

async function stopAll(code: number) {
  if (stopping) return;
  stopping = true;
  process.stdout.write("\nstopping the local stack...\n");
  for (const c of children.reverse()) if (c.exitCode === null) c.kill("SIGTERM");
  await Promise.all(nodes.map((n) => n.stop()));
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)));
  process.exit(code);
}
process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));

function child(name: string, script: string, childEnv: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ["--import", "tsx", script], { cwd: ROOT, env: { ...env, ...childEnv }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(c);
    let seen = "";
    const onData = (d: Buffer) => {
      const s = d.toString();
      if (!seen.includes("\u0000ready")) {
        seen += s;
        if (ready.test(seen)) {
          seen += "\u0000ready";
          resolve(c);
        }
      }
      if (env.STACK_VERBOSE) process.stdout.write(`[${name}] ${s}`);
    };
    c.stdout!.on("data", onData);
    c.stderr!.on("data", (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    c.once("exit", (code) => {
      if (!stopping) {
        process.stderr.write(`${name} exited with ${code}\n`);
        reject(new Error(`${name} exited`));
        void stopAll(1);
      }
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
  await child("gateway", "gateway/src/main.ts", {
    PORT: String(PORTS.gateway),
    DATA_DIR: dataDir,
    BASE_RPC_URL: fork.rpcUrl,
    X402_FACILITATOR: "local",
    X402_FACILITATOR_URL: `http://127.0.0.1:${PORTS.facilitator}`,
    X402_PAY_TO: payTo,
    FEE_RECIPIENT: feeRecipient,
    AUTOMATION_ADDRESS: automation.address,
    LOG_LEVEL: env.LOG_LEVEL ?? "info",
  }, /gateway listening/);
  await child("protection", "gateway/src/protection/main.ts", {
    DATA_DIR: dataDir,
    BASE_RPC_URL: fork.rpcUrl,
    AUTOMATION_PRIVATE_KEY: hexKey(5),
    LOG_LEVEL: env.LOG_LEVEL ?? "info",
  }, /protection engine running/);

  const gw = `http://127.0.0.1:${PORTS.gateway}`;
  process.stdout.write(
    [
      "",
      "local stack running (Ctrl-C stops everything)",
      `  gateway       ${gw}   (API reference ${gw}/docs, MCP ${gw}/api/mcp)`,
      `  Base fork     ${fork.rpcUrl}   chain 8453${forkUrl ? ` (forking ${forkUrl})` : " (offline fixture: real Aave V3 at the real addresses)"}`,
      `  Base Sepolia  ${sepolia.rpcUrl}   chain 84532 (x402 payments, USDC ${sepolia.usdc})`,
      `  facilitator   http://127.0.0.1:${PORTS.facilitator}   (settles from ${devAccount(1).address})`,
      "",
      "accounts (Anvil's public development keys; never use them for real funds)",
      `  demo agent    ${agent.address}   10,000 USDC + ETH on the fork, 100 USDC on Base Sepolia`,
      `                keystore ${path.relative(ROOT, keystore)}, passphrase "${DEMO_PASSPHRASE}"`,
      `  x402 pay-to   ${payTo}`,
      `  fee recipient ${feeRecipient}`,
      `  automation    ${automation.address}   (the protection engine's key; never a Safe owner)`,
      `  operator      ${operatorAccount.address}   ETH on the fork; keystore .data/operator/keystore.json, same passphrase`,
      "",
      "try, in a second terminal:",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent run deposit 500`,
      "a managed treasury on a Safe (README: operator walk-through):",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent operator create-safe   (then fund 10 --borrow 15000, register, approve)`,
      "",
    ].join("\n"),
  );
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  void stopAll(1);
});
