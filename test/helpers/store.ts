/**
 * The store a test runs on: TEST_STORE=postgres (the `postgres` project, vitest.config.ts) gives each caller a
 * database of its own on the run's PostgreSQL (test/setup/postgres.ts), cloned from the template migrated to the
 * current schema; else a SQLite file in the test's data directory, migrated when it is opened.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { inject } from "vitest";
import type { DatabaseLocation } from "../../gateway/src/store/db";

export const TEST_STORE: "sqlite" | "postgres" = process.env.TEST_STORE === "postgres" ? "postgres" : "sqlite";

/** a new database of the run's backend at the current schema, with no rows */
export const freshDatabase = (dataDir: string): Promise<DatabaseLocation> => newDatabase(dataDir, inject("postgresTemplate"));

/** a new database of the run's backend with no schema at all (what a migration test upgrades step by step) */
export const emptyDatabase = (dataDir: string): Promise<DatabaseLocation> => newDatabase(dataDir, undefined);

async function newDatabase(dataDir: string, template: string | undefined): Promise<DatabaseLocation> {
  if (TEST_STORE === "sqlite") return { file: path.join(dataDir, "gateway.sqlite") };
  const admin = inject("postgresAdminUrl");
  if (!admin) throw new Error("TEST_STORE=postgres without a PostgreSQL (see test/setup/postgres.ts)");
  const name = `t_${randomBytes(8).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString() };
}

/**
 * The write transactions `fn` makes on `db` while nothing else runs on it: each top-level
 * `transaction(...)` counts one, and so does each `run(...)` outside one (an autocommitted write).
 * Reads (`get`, `all`) count nothing.
 */
export async function countWriteTransactions(
  db: { transaction: (...a: any[]) => Promise<any>; run: (...a: any[]) => Promise<any> },
  fn: () => Promise<void>,
): Promise<number> {
  const { transaction, run } = db;
  let open = 0;
  let writes = 0;
  db.transaction = async (...a: any[]) => {
    if (open++ === 0) writes++;
    try {
      return await transaction.apply(db, a);
    } finally {
      open--;
    }
  };
  db.run = (...a: any[]) => {
    if (open === 0) writes++;
    return run.apply(db, a);
  };
  try {
    await fn();
  } finally {
    db.transaction = transaction;
    db.run = run;
  }
  return writes;
}
