/**
 * The protection engine as its own process (gateway/src/protection/main.ts) on the scenario's store and fork,
 * as the crash run starts it: once, then again after it is killed with SIGKILL in the middle of an act.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Hex } from "viem";
import type { DatabaseLocation } from "../../gateway/src/store/db";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface EngineProcessOptions {
  database: DatabaseLocation;
  /** the SQLite file's directory (DATA_DIR) when the store is not PostgreSQL */
  dataDir: string;
  rpcUrl: string;
  automationKey: Hex;
  /** every process started is pushed here at once, so that the runner kills it whatever happens */
  children: ChildProcess[];
}

/** the engine as its own process; resolves once it says it runs (a restart is as fast as the supervisor, not as tsx's start-up) */
export async function startEngineProcess(o: EngineProcessOptions): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/protection/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...("url" in o.database ? { DATABASE_URL: o.database.url } : { DATA_DIR: o.dataDir }),
      BASE_RPC_URL: o.rpcUrl,
      AUTOMATION_PRIVATE_KEY: o.automationKey,
      PROTECTION_INTERVAL_MS: "50",
      // the head polled often (the runner's blocks are 120 ms apart); a dead engine's shards and claims lapse in 1.5 s
      PROTECTION_POLL_MS: "20",
      LEASE_MS: "1500",
      SHARD_LEASE_MS: "1500",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  o.children.push(child);
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("protection engine running")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the engine process exited with ${code} before it ran`)));
  });
  child.stdout!.resume();
  return child;
}
