/**
 * The store's database: one contract, two backends. The embedded default is a
 * SQLite file under DATA_DIR (better-sqlite3, WAL); `DATABASE_URL=postgres://…`
 * selects a shared PostgreSQL server (node-postgres pool), which is what lets
 * several gateway instances, protection engines and facilitators run at once.
 *
 * Queries are plain SQL in the subset both dialects share (`?` placeholders,
 * `ON CONFLICT`, `RETURNING`, partial and expression indexes); the schema's
 * dialect differences are stated in store/schema/dialect.ts, the schema once
 * in store/schema/ (tables, history). A transaction is one serializable
 * unit: every query issued inside `transaction(fn)`, through any store, joins
 * it (AsyncLocalStorage), so stores compose into one atomic claim without
 * passing a handle around.
 *
 * This file is the contract only (types, and what every backend shares);
 * opening a database and migrating it is store/open-database.ts, which knows
 * the backends.
 */

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
   * re-runs `fn`, so `fn` must do nothing outside the database: a call to a node or a facilitator inside it
   * throws (`chain call inside a store transaction`, @treasury/core/lib/store-transaction).
   */
  transaction<T>(fn: () => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** several statements, no parameters (migrations, test fixtures) */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The store gave up a transaction that kept colliding with others: PostgreSQL's SQLSTATEs that mean "run it
 * again" (serialization_failure, deadlock_detected), left after the backend's own retries.
 */
export const isContention = (err: unknown): boolean => ["40001", "40P01"].includes(String((err as { code?: unknown } | null)?.code));

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
