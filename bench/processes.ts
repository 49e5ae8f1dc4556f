/**
 * Every server the bench measures runs in its own process, started the way
 * production starts it: the gateway and the facilitator from the stack's
 * bundles (scripts/stack-build.mjs: compiled JavaScript, not tsx), at the
 * production log level (info: one access-log line per request, written to a
 * file as a deployment writes its logs). The bench process only generates load.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { stackEntries } from "../scripts/stack-build.mjs";

export const ROOT = path.resolve(import.meta.dirname, "..");

export interface ServerProcess {
  proc: ChildProcess;
  /** the line that said it was ready */
  line: string;
  logFile: string;
  /** performance.now() when it was spawned */
  spawnedAt: number;
  stop(): Promise<void>;
}

/**
 * Start `node <args>` with its output in `logFile`; ready when a line of the log matches `ready`.
 * `nodeFlags` go before the script (e.g. --cpu-prof).
 */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  logFile: string,
  nodeFlags: string[] = [],
  opts: { stdin?: "pipe" } = {},
): Promise<ServerProcess> {
  const fd = fs.openSync(logFile, "w");
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, [...nodeFlags, ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: "production", ...env },
    stdio: [opts.stdin ?? "ignore", fd, fd],
  });
  fs.closeSync(fd);
  let exited: number | null | undefined;
  const gone = new Promise<void>((resolve) => proc.once("exit", (code) => ((exited = code), resolve())));
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = fs.readFileSync(logFile, "utf8");
    const line = text.split("\n").find((l) => ready.test(l));
    if (line) {
      return {
        proc,
        line,
        logFile,
        spawnedAt,
        stop: async () => {
          if (exited === undefined) proc.kill("SIGTERM");
          await gone;
        },
      };
    }
    if (exited !== undefined) throw new Error(`${args.join(" ")} exited with ${exited}: ${text.slice(-2000)}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${args.join(" ")} did not start: ${text.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The stack's bundles, copied for this run: a start elsewhere in the tree that builds changed sources removes
 * the bundles it replaces, and a process of this run still loads chunks from its own (code splitting) long
 * after it started. The copy stays inside node_modules (the packages left outside the bundle resolve from
 * there) and is removed when the run exits.
 */
async function entriesForRun(): Promise<Record<string, string[]>> {
  const { args } = (await stackEntries(ROOT, process.env)) as { args: Record<string, string[]> };
  const bundle = args.gateway?.[0];
  if (!bundle?.endsWith(".mjs")) return args; // through tsx: the sources themselves
  const from = path.dirname(bundle);
  const to = path.join(ROOT, "node_modules", ".cache", "treasury-bench", `${path.basename(from)}-${process.pid}`);
  fs.cpSync(from, to, { recursive: true });
  process.once("exit", () => fs.rmSync(to, { recursive: true, force: true }));
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, v.map((a) => (a.startsWith(from) ? path.join(to, path.relative(from, a)) : a))]));
}

let entries: Promise<Record<string, string[]>> | undefined;
/** the node arguments of a stack program (its bundle) */
export async function entry(name: "gateway" | "facilitator"): Promise<string[]> {
  entries ??= entriesForRun();
  return (await entries)[name]!;
}

/** a bench-only server (bench/servers/*.ts) through tsx: the baseline and the stock x402 anchor */
export const benchServer = (file: string): string[] => ["--import", "tsx", path.join(ROOT, "bench", "servers", file)];

/** the URL a server printed: `{"url": ...}` (bench servers) or the gateway's pino line with `url` */
export const urlOf = (line: string): string => (JSON.parse(line) as { url: string }).url;

/** the gateway, as `npm run gateway` would run it (bundle), on a free port with its own data directory */
export async function startGatewayProcess(dir: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<ServerProcess & { url: string }> {
  const dataDir = fs.mkdtempSync(path.join(dir, "gateway-"));
  const p = await startProcess(
    await entry("gateway"),
    {
      PORT: "0",
      DATA_DIR: dataDir,
      SECRETS_KEY: "22".repeat(32),
      RATE_LIMIT_READ_PER_MIN: "100000000",
      RATE_LIMIT_WRITE_PER_MIN: "100000000",
      CREDENTIALS_PER_HOUR: "100000000",
      ...env,
    },
    /"msg":"gateway listening"/,
    path.join(dir, `gateway-${path.basename(dataDir)}.log`),
    nodeFlags,
  );
  return { ...p, url: urlOf(p.line) };
}

/**
 * x402 sessions (`batch-settlement`): the facilitator's sending account and receiver authorizer (Anvil's dev
 * accounts 6 and 7, public test keys), and the gateway's side of them: the authorizer's address and the
 * redemption policy (the count is the gateway's default; the age is short so that a run's last vouchers are
 * redeemed within seconds of its end).
 */
export const SESSION_FACILITATOR_ENV = {
  FACILITATOR_SESSION_PRIVATE_KEY: "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  FACILITATOR_AUTHORIZER_PRIVATE_KEY: "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
};
export const SESSION_GATEWAY_ENV = {
  X402_SESSION_RECEIVER_AUTHORIZER: "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
  X402_SESSION_REDEEM_VOUCHERS: "100",
  X402_SESSION_REDEEM_SECONDS: "2",
};

export async function startFacilitatorProcess(
  dir: string,
  rpcUrl: string,
  port: number,
  nodeFlags: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess & { url: string }> {
  const p = await startProcess(
    await entry("facilitator"),
    {
      FACILITATOR_RUN_MAIN: "1",
      FACILITATOR_RPC_URL: rpcUrl,
      FACILITATOR_PRIVATE_KEY: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
      FACILITATOR_PORT: String(port),
      ...env,
    },
    /facilitator listening/,
    path.join(dir, "facilitator.log"),
    nodeFlags,
  );
  return { ...p, url: `http://127.0.0.1:${port}` };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux) */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** CPU milliseconds per request each process spent while `run` made `requests` requests, and how busy the machine was */
export async function cpuPerRequest<T extends { requests: number; seconds: number }>(
  pids: Record<string, number | undefined>,
  run: () => Promise<T>,
): Promise<T & { cpu_ms_per_request: Record<string, number>; machine_busy_pct: number }> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const self = process.cpuUsage();
  const r = await run();
  const used: Record<string, number> = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - before[k]!]));
  const own = process.cpuUsage(self);
  used["load generator"] = (own.user + own.system) / 1e6;
  const total = Object.values(used)
    .filter(Number.isFinite)
    .reduce((a, b) => a + b, 0);
  return {
    ...r,
    cpu_ms_per_request: Object.fromEntries(Object.entries(used).map(([k, s]) => [k, Number(((1000 * s) / Math.max(1, r.requests)).toFixed(2))])),
    machine_busy_pct: Number(((100 * total) / (r.seconds * os.cpus().length)).toFixed(0)),
  };
}
