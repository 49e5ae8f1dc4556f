/**
 * A gateway as its own process (gateway/src/main.ts), for tests that kill -9
 * it: on the store the caller names (DATABASE_URL, or DATA_DIR holding the
 * SQLite file), with a fixed SECRETS_KEY so instances share secrets.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../fixtures/anvil";
import type { DatabaseLocation } from "../../gateway/src/store/db";

const ROOT = path.resolve(__dirname, "../..");

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
}

/** the environment that points a gateway or engine process at a store */
export function storeEnv(location: DatabaseLocation): Record<string, string> {
  return "url" in location
    ? { DATABASE_URL: location.url, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "gw-proc-")) }
    : { DATA_DIR: path.dirname(location.file) };
}

/** start one and wait until it answers; `children` collects it for the caller's cleanup */
export async function gatewayProcess(location: DatabaseLocation, env: Record<string, string>, children: ChildProcess[]): Promise<GatewayProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...storeEnv(location),
      PORT: String(port),
      SECRETS_KEY: "11".repeat(32),
      RATE_LIMIT_READ_PER_MIN: "100000",
      RATE_LIMIT_WRITE_PER_MIN: "100000",
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const keep = (b: Buffer) => void (output = (output + b.toString()).slice(-4_000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode}: ${output}`);
    if (Date.now() > deadline) throw new Error(`gateway did not start: ${output}`);
    const up = await fetch(`${url}/api/v1/public/gateway-status`)
      .then((r) => {
        if (!r.ok) output += ` status ${r.status}`;
        return r.ok;
      })
      .catch(() => false);
    if (up) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
}
