/**
 * The store's database: one contract, two backends. The embedded default is a
 * SQLite file under DATA_DIR (better-sqlite3, WAL); `DATABASE_URL=postgres://…`
 * selects a shared PostgreSQL server (node-postgres pool), which is what lets
 * several gateway instances, protection engines and facilitators run at once.
 *
 * Queries are plain SQL in the subset both dialects share (`?` placeholders,
 * `ON CONFLICT`, `RETURNING`, partial and expression indexes); the dialect
 * differences live in the migrations only. A transaction is one serializable
 * unit: every query issued inside `transaction(fn)`, through any store, joins
 * it (AsyncLocalStorage), so stores compose into one atomic claim without
 * passing a handle around.
 */
import { MIGRATIONS, POSTGRES_MIGRATIONS, type Migration } from "./migrations";
import { openPostgres } from "./postgres-db";
/** the store gave up a transaction that kept colliding with others (PostgreSQL, after its retries) */
export { isContention } from "./postgres-db";
import { openSqlite } from "./sqlite-db";

export type Dialect = "sqlite" | "postgres";

export type SqlValue = string | number | bigint | boolean | null | undefined;

export interface Db {
  readonly dialect: Dialect;
  /** every row the statement returns */
  all<T = any>(sql: string, ...params: SqlValue[]): Promise<T[]>;
  /** the first row, if any */
  get<T = any>(sql: string, ...params: SqlValue[]): Promise<T | undefined>;
  /** a statement for its effect: how many rows it changed */
  run(sql: string, ...params: SqlValue[]): Promise<{ changes: number }>;
  /**
   * Run `fn` as one serializable transaction; every query inside joins it
   * (nested calls join the outer one). On PostgreSQL a serialization failure
   * re-runs `fn`, so `fn` must do nothing outside the database.
   */
  transaction<T>(fn: () => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** several statements, no parameters (migrations, test fixtures) */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

export interface TransactionOptions {
  /**
   * PostgreSQL only: "read committed" gives each statement a fresh snapshot,
   * for a transaction that first waits on a lock and must then see what the
   * holder committed (migrations). Default serializable.
   */
  isolation?: "serializable" | "read committed";
}

/** where the store lives: a PostgreSQL URL, or a SQLite file (":memory:" for a throwaway) */
export type DatabaseLocation = { url: string } | { file: string };

export function describeLocation(location: DatabaseLocation): string {
  if ("file" in location) return `sqlite:${location.file}`;
  const u = new URL(location.url);
  return `postgres://${u.hostname}:${u.port || 5432}${u.pathname}`; // never the password
}

export async function openDatabase(location: DatabaseLocation, migrations?: Migration[]): Promise<Db> {
  if ("url" in location) {
    const db = await openPostgres(location.url);
    await migrate(db, migrations ?? POSTGRES_MIGRATIONS);
    return db;
  }
  const db = openSqlite(location.file);
  await migrate(db, migrations ?? MIGRATIONS);
  return db;
}

export function migrationsFor(dialect: Dialect): Migration[] {
  return dialect === "postgres" ? POSTGRES_MIGRATIONS : MIGRATIONS;
}

/** apply the migrations not yet applied, each in its own transaction; instances starting together apply each once */
export async function migrate(db: Db, migrations: Migration[]): Promise<number[]> {
  // PostgreSQL: instances starting at once queue on one advisory lock (even CREATE TABLE IF NOT EXISTS races there)
  const queue = async () => {
    if (db.dialect === "postgres") await db.get("SELECT pg_advisory_xact_lock(4020) AS locked");
  };
  await db.transaction(
    async () => {
      await queue();
      await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    },
    { isolation: "read committed" },
  );
  const ran: number[] = [];
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (const m of sorted) {
    const applied = await db.transaction(async () => {
      await queue(); // the first applies it, the rest find it applied

      if (await db.get("SELECT 1 AS one FROM schema_migrations WHERE version = ?", m.version)) return false;
      await db.exec(m.sql);
      await db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", m.version, m.name, new Date().toISOString());
      return true;
    }, { isolation: "read committed" });
    if (applied) ran.push(m.version);
  }
  return ran;
}

export async function schemaVersion(db: Db): Promise<number> {
  const row = await db.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_migrations");
  return row?.v ?? 0;
}
