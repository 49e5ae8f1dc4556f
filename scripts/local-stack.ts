/**
 * npm start: the whole local stack, with nothing but `npm install` before it.
 *
 *   Base fork        anvil, chain 8453, from fixtures/base-fork-state.json
 *                    (or `anvil --fork-url $BASE_FORK_URL` when that is set)   :8545
 *   Base Sepolia     anvil, chain 84532, TestUSDC at the real USDC address     :8546
 *   facilitator      the project's x402 facilitator (its own process)          :4021
 *   gateway          the treasury gateway, reading and relaying on the fork    :4020
 *   protection       the protection engine (automation key), watching managed Safes (one per instance with --instances N, sharing them by shards)
 *
 * It funds a demo agent (Anvil dev account 3: public test keys, never real
 * funds), writes its encrypted keystore and policy under .data/agent, prints
 * every URL and account, and stops every child process on Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createWalletClient, http, parseAbi, publicActions } from "viem";
import { base } from "viem/chains";
import { STATE_INTERVAL_SECONDS, startAnvil, type AnvilNode } from "../fixtures/anvil";
import { BASE_BLOCK_SECONDS, forkManifest, fundOnFork, startBaseFork } from "../fixtures/base-fork";
import { DEV_MNEMONIC, devAccount, startBaseSepolia } from "../fixtures/base-sepolia";
import { removeStackFile, stackFilePath, writeStackFile } from "../signer-agent/src/stack-file";
import type { RunningPostgres } from "./embedded-postgres";
import { stackEntries } from "./stack-build.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const PORTS = {
  fork: Number(env.FORK_PORT ?? 8545),
  sepolia: Number(env.BASE_SEPOLIA_PORT ?? 8546),
  facilitator: Number(env.FACILITATOR_PORT ?? 4021),
  gateway: Number(env.PORT ?? 4020),
};
/** the i-th gateway's port: PORT, then the next ports up that no other part of the stack listens on */
const gatewayPort = (i: number): number => {
  const taken = new Set([PORTS.fork, PORTS.sepolia, PORTS.facilitator]);
  let port = PORTS.gateway;
  for (let k = 0; ; port++) if (!taken.has(port) && k++ === i) return port;
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
function child(name: string, nodeArgs: string[], childEnv: Record<string, string>, ready: RegExp, supervise = false): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    let isReady = false;
    const c = spawn(process.execPath, nodeArgs, { cwd: ROOT, env: { ...env, ...childEnv }, stdio: ["ignore", "pipe", "pipe"] });
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
          child(name, nodeArgs, childEnv, ready, true).then(
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

/** a database URL without its password, for the printout */
function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparsable DATABASE_URL)";
  }
}

/** how long each part took to be ready, printed with the ready line */
const timings: [string, number][] = [];
async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const value = await work();
  timings.push([name, performance.now() - t]);
  return value;
}

async function main() {
  const t0 = performance.now();
  const forkUrl = env.BASE_FORK_URL;
  const dataDir = path.resolve(env.DATA_DIR ?? path.join(ROOT, ".data"));
  const agent = devAccount(3);
  const automation = devAccount(5);
  const operatorAccount = devAccount(6);
  const payTo = devAccount(2).address;
  const feeRecipient = devAccount(4).address;
  const agentDir = path.join(dataDir, "agent");
  const keystore = path.join(agentDir, "keystore.json");
  const policyFile = path.join(agentDir, "policy.json");
  const operatorKeystore = path.join(dataDir, "operator", "keystore.json");
  const instances = instancesArg();

  // the chains live on in DATA_DIR beside the store that records them; a start without them (the first, or
  // --fresh) starts the store, the operator's Safe record and the agent's audit log over too, so the two agree
  const chainsDir = path.join(dataDir, "chains");
  const forkState = path.join(chainsDir, "base-fork.json");
  const sepoliaState = path.join(chainsDir, "base-sepolia.json");
  // what the kept chains were recorded with: a store or a fork of another kind would not agree with them
  const marker = path.join(chainsDir, "kept-with.json");
  const keptWith = {
    store: env.DATABASE_URL ? `PostgreSQL ${redactedUrl(env.DATABASE_URL)}` : instances > 1 ? "embedded PostgreSQL" : "SQLite",
    fork: forkUrl ? `fork of ${forkUrl}` : "offline fixture",
  };
  const fresh = process.argv.includes("--fresh") || !fs.existsSync(forkState) || !fs.existsSync(sepoliaState) || !fs.existsSync(marker);
  if (!fresh) {
    const was = JSON.parse(fs.readFileSync(marker, "utf8")) as typeof keptWith;
    if (was.store !== keptWith.store || was.fork !== keptWith.fork) {
      process.stderr.write(
        `the chains in ${chainsDir} were kept with the store "${was.store}" and the ${was.fork}; this start uses "${keptWith.store}" and the ${keptWith.fork}, which would not agree with them: start as before, or start over with npm start -- --fresh\n`,
      );
      process.exit(2);
    }
  }
  if (fresh) {
    // an external DATABASE_URL is never touched: resetting it is its owner's call
    const stale = [
      chainsDir,
      path.join(dataDir, "postgres"),
      path.join(dataDir, "operator", "operator.json"),
      path.join(agentDir, "audit.jsonl"),
      path.join(agentDir, "treasury.json"),
      path.join(dataDir, "operator", "audit.jsonl"),
    ];
    for (const f of ["gateway.sqlite", "gateway.sqlite-wal", "gateway.sqlite-shm"]) stale.push(path.join(dataDir, f));
    for (const f of stale) fs.rmSync(f, { recursive: true, force: true });
    fs.mkdirSync(chainsDir, { recursive: true });
    fs.writeFileSync(marker, `${JSON.stringify(keptWith, null, 2)}\n`);
  }

  // everything that does not wait for anything starts at once: the two chains, the facilitator (it reaches
  // its chain on the first request), the keystores (scrypt: created once, kept in DATA_DIR), the embedded PostgreSQL
  const forkReady = timed("Base fork", () =>
    forkUrl
      ? startAnvil({
          chainId: 8453,
          port: PORTS.fork,
          args: ["--fork-url", forkUrl, "--mnemonic", DEV_MNEMONIC],
          timestampInterval: BASE_BLOCK_SECONDS,
          keepState: forkState,
        })
      : startBaseFork({ port: PORTS.fork, keepState: forkState }),
  ).then((n) => (nodes.push(n), n));
  const sepoliaReady = timed("Base Sepolia", () => startBaseSepolia({ port: PORTS.sepolia, keepState: sepoliaState })).then((n) => (nodes.push(n), n));
  // from npm start (scripts/start.mjs), which built them before this script loaded; else built here
  const given = env.STACK_ENTRIES ? (JSON.parse(env.STACK_ENTRIES) as Awaited<ReturnType<typeof stackEntries>> & { build_ms: number }) : null;
  const buildStarted = performance.now();
  const entries = given ?? (await stackEntries(ROOT, env));
  const buildMs = given ? given.build_ms : performance.now() - buildStarted;
  // a new key at every start, shared by the facilitator and the gateways it serves (nobody else may ask it to settle)
  const facilitatorApiKey = randomBytes(24).toString("hex");
  const facilitatorReady = timed(
    "facilitator",
    () =>
      child(
        "facilitator",
        entries.args.facilitator,
        {
          FACILITATOR_RUN_MAIN: "1",
          FACILITATOR_RPC_URL: `http://127.0.0.1:${PORTS.sepolia}`,
          FACILITATOR_PRIVATE_KEY: hexKey(1),
          // sessions (batch-settlement): the account that sends deposits, claims and settlements, and the receiver authorizer; upto's own account
          FACILITATOR_SESSION_PRIVATE_KEY: hexKey(6),
          FACILITATOR_AUTHORIZER_PRIVATE_KEY: hexKey(7),
          FACILITATOR_UPTO_PRIVATE_KEY: hexKey(8),
          // it answers its gateways only
          FACILITATOR_API_KEY: facilitatorApiKey,
          FACILITATOR_PORT: String(PORTS.facilitator),
        },
        /facilitator listening/,
        true,
      ), // supervised like the gateway: a settlement it dies in is reconciled by the retry
  );
  const keystoresReady = timed("keystores", async () => {
    // ethers (the keystore format) is loaded only when a keystore must be made
    if (!fs.existsSync(keystore)) await (await import("../signer-agent/src/keystore")).createKeystore(keystore, DEMO_PASSPHRASE, hexKey(3));
    if (!fs.existsSync(policyFile))
      fs.writeFileSync(policyFile, `${JSON.stringify((await import("../signer-agent/src/policy")).defaultPolicy([feeRecipient]), null, 2)}\n`);
    if (!fs.existsSync(operatorKeystore)) await (await import("../signer-agent/src/keystore")).createKeystore(operatorKeystore, DEMO_PASSPHRASE, hexKey(6));
  });
  // --instances N: N gateways on PORT, PORT+1, ... sharing one PostgreSQL (DATABASE_URL, else an embedded one)
  let databaseUrl = env.DATABASE_URL;
  let postgres: RunningPostgres | undefined;
  if (instances > 1 && !databaseUrl) {
    // imported only here: embedded-postgres installs exit hooks of its own (they would change the stack's exit code)
    const { startEmbeddedPostgres } = await import("./embedded-postgres");
    postgres = await timed("PostgreSQL", () =>
      startEmbeddedPostgres({ dataDir: path.join(dataDir, "postgres"), port: Number(env.POSTGRES_PORT ?? 5433), persistent: true, database: "treasury" }),
    );
    stopHooks.push(() => postgres!.stop());
    databaseUrl = postgres.url;
  }
  const storeEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  const fork = await forkReady;
  // the gateways and the engine need only the fork's URL to start; they start together
  const gatewaysReady = Promise.all(
    Array.from({ length: instances }, (_, i) => {
      const name = instances > 1 ? `gateway-${i + 1}` : "gateway";
      return timed(name, () =>
        child(
          name,
          entries.args.gateway,
          {
            ...storeEnv,
            PORT: String(gatewayPort(i)),
            DATA_DIR: dataDir,
            BASE_RPC_URL: fork.rpcUrl,
            X402_FACILITATOR: "local",
            X402_FACILITATOR_URL: `http://127.0.0.1:${PORTS.facilitator}`,
            X402_PAY_TO: payTo,
            // x402 sessions and upto, with the facilitator's receiver authorizer and upto account (Base Sepolia dev accounts 7 and 8)
            X402_SESSION_RECEIVER_AUTHORIZER: devAccount(7).address,
            X402_UPTO_FACILITATOR: devAccount(8).address,
            X402_FACILITATOR_API_KEY: facilitatorApiKey,
            FEE_RECIPIENT: feeRecipient,
            AUTOMATION_ADDRESS: automation.address,
            LOG_LEVEL: env.LOG_LEVEL ?? "info",
            // one developer's machine is one client address for everything it tries: room for the tour, the
            // walk-throughs and the tests run again and again (the gateway's own defaults are 20 and 10)
            RATE_LIMIT_WRITE_PER_MIN: env.RATE_LIMIT_WRITE_PER_MIN ?? "300",
            CREDENTIALS_PER_HOUR: env.CREDENTIALS_PER_HOUR ?? "500",
          },
          /gateway listening/,
          true,
        ),
      );
    }),
  );
  // an engine per instance: the engines of the one automation key share its Safes by leased shards
  const protectionReady = Promise.all(
    Array.from({ length: instances }, (_, i) => {
      const name = instances > 1 ? `protection-${i + 1}` : "protection";
      return timed(name, () =>
        child(
          name,
          entries.args.protection,
          {
            ...storeEnv,
            DATA_DIR: dataDir,
            BASE_RPC_URL: fork.rpcUrl,
            AUTOMATION_PRIVATE_KEY: hexKey(5),
            LOG_LEVEL: env.LOG_LEVEL ?? "info",
          },
          /protection engine running/,
          true,
        ),
      );
    }),
  );
  const sepolia = await sepoliaReady;
  // fund the demo agent on a new chain: USDC and ETH on the fork (TestUSDC's minter is dev account 0), USDC on Base Sepolia for x402
  const fundingReady = timed("demo funds", async () => {
    if (!fresh) return;
    await Promise.all([
      forkUrl ? Promise.resolve() : fundOnFork(fork.rpcUrl, forkManifest().tokens.USDC, agent.address, 10_000_000_000n),
      sepolia.fund(agent.address, 100_000_000n),
    ]);
  });
  await Promise.all([facilitatorReady, keystoresReady, gatewaysReady, protectionReady, fundingReady]);
  const readyMs = performance.now() - t0;
  // from the process's own start (its imports included)
  const sinceStartMs = performance.now();

  const gw = `http://127.0.0.1:${PORTS.gateway}`;
  const stackFile = stackFilePath(env);
  writeStackFile(stackFile, {
    object: "local_stack",
    pid: process.pid,
    started_at: new Date().toISOString(),
    gateway_url: gw,
    gateway_urls: Array.from({ length: instances }, (_, i) => `http://127.0.0.1:${gatewayPort(i)}`),
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
      `local stack running (Ctrl-C stops everything): ready ${(sinceStartMs / 1000).toFixed(1)} s after start (processes from ${entries.how} ${(buildMs / 1000).toFixed(1)} s, loading ${((sinceStartMs - readyMs - (given ? buildMs : 0)) / 1000).toFixed(1)} s, then in parallel: ${timings.map(([n, ms]) => `${n} ${(ms / 1000).toFixed(1)} s`).join(", ")})`,
      `  gateway       ${gw}   (API reference ${gw}/docs, MCP ${gw}/api/mcp)`,
      `  console       ${gw}/console   (operators sign in with a Safe owner's wallet; reviewers at ${gw}/console#reviewer ${env.ADMIN_TOKEN ? "with your ADMIN_TOKEN" : "once the stack is started with ADMIN_TOKEN=<24+ characters>"})`,
      ...Array.from(
        { length: instances - 1 },
        (_, i) => `  gateway ${i + 2}     http://127.0.0.1:${gatewayPort(i + 1)}   (same store, any of them serves the whole loop)`,
      ),
      `  store         ${databaseUrl ? `PostgreSQL ${redactedUrl(databaseUrl)}${postgres ? " (embedded, data in .data/postgres)" : ""}` : `SQLite ${path.relative(ROOT, path.join(dataDir, "gateway.sqlite"))}`}`,
      `  chains        ${fresh ? "new" : "restored from the last run"}, kept in ${shown(chainsDir)} (written every ${STATE_INTERVAL_SECONDS} s and on Ctrl-C; npm start -- --fresh starts the chains and the store over${env.DATABASE_URL ? ", but not an external DATABASE_URL's database" : ""})`,
      `  Base fork     ${fork.rpcUrl}   chain 8453${forkUrl ? ` (forking ${forkUrl})` : " (offline fixture: real Aave V3 at the real addresses)"}`,
      `  Base Sepolia  ${sepolia.rpcUrl}   chain 84532 (x402 payments, USDC ${sepolia.usdc})`,
      `  facilitator   http://127.0.0.1:${PORTS.facilitator}   (settles from ${devAccount(1).address})`,
      "",
      "accounts (Anvil's public development keys; never use them for real funds)",
      `  demo agent    ${agent.address}   ${fresh ? "funded with" : "was funded on the first start with"} 10,000 USDC + ETH on the fork, 100 USDC on Base Sepolia`,
      `                keystore ${shown(keystore)}, passphrase "${DEMO_PASSPHRASE}"`,
      `  x402 pay-to   ${payTo}`,
      `  fee recipient ${feeRecipient}`,
      `  automation    ${automation.address}   (the protection engine's and Safe executor's key; never a Safe owner)`,
      `  operator      ${operatorAccount.address}   ETH on the fork; keystore ${shown(operatorKeystore)}, same passphrase`,
      "",
      `where it runs: ${shown(stackFile)} (the signer-agent commands below read their defaults from it)`,
      "try, in a second terminal (in this directory):",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent run deposit 500`,
      "a managed treasury on a Safe (docs/OPERATOR.md walks it through):",
      `  SIGNER_PASSPHRASE=${DEMO_PASSPHRASE} npx signer-agent operator create-safe   # then: operator fund 10 --borrow 15000, register, approve; sign queued actions: operator sign`,
      "",
    ].join("\n"),
  );
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  void stopAll(1);
});
