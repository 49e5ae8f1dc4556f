/**
 * The embedded backend: one better-sqlite3 connection (WAL) behind the async
 * store contract. better-sqlite3 is synchronous, so a transaction that awaits
 * holds a lock: while it is open every other query of this process waits its
 * turn, instead of silently running inside someone else's transaction.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { storeTransactionBody } from "@treasury/core/lib/store-transaction";
import type { Db, SqlValue } from "./db";
import { SqliteCheckpointer } from "./sqlite-checkpointer";

export function openSqlite(file: string): Db {
  const onDisk = file !== ":memory:";
  if (onDisk) {
    // the database and its WAL/SHM files are readable by the service's user only (0600, directory 0700)
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.chmodSync(path.dirname(file), 0o700);
    fs.closeSync(fs.openSync(file, "a", 0o600));
    fs.chmodSync(file, 0o600);
  }
  const raw = new Database(file);
  raw.pragma("journal_mode = WAL");
  if (onDisk) for (const f of [`${file}-wal`, `${file}-shm`]) if (fs.existsSync(f)) fs.chmodSync(f, 0o600);
  raw.pragma("synchronous = NORMAL");
  raw.pragma("foreign_keys = ON");
  // no busy handler on this connection: SQLite's sleeps in it stop the whole event loop (better-sqlite3 is
  // synchronous). A busy answer is tried again by `untilNotBusy` on a timer instead, the loop serving other
  // requests meanwhile. Measured: BEGIN IMMEDIATE slept 0.6 of 8 s of a deposit load in the busy handler
  // while the checkpoint worker ran (bench/README.md, item 20).
  raw.pragma("busy_timeout = 0");
  return new SqliteDb(raw, onDisk ? file : undefined);
}

const isBusy = (err: unknown): boolean => String((err as { code?: unknown }).code ?? "").startsWith("SQLITE_BUSY");

/** how often a statement outside a transaction (or a BEGIN) is tried when SQLite answers busy (about 5 s in all, as the busy timeout it replaces) */
export const BUSY_ATTEMPTS = 260;

/** commits on the request thread (with SQLite's own checkpoints) before the checkpoint worker takes over: a short-lived database never starts one */
export const COMMITS_BEFORE_CHECKPOINT_WORKER = 256;

const bind = (params: SqlValue[]): unknown[] => params.map((p) => (p === undefined ? null : typeof p === "boolean" ? (p ? 1 : 0) : p));

class SqliteDb implements Db {
  readonly dialect = "sqlite" as const;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly inTransaction = new AsyncLocalStorage<true>();
  /** the tail of the queue of transactions (and of queries waiting for one to end) */
  private queue: Promise<void> = Promise.resolve();
  private busy = false;

  private commits = 0;
  /** checkpoints in a worker thread once the database is busy (sqlite-checkpointer.ts); until then SQLite's own */
  checkpointer: SqliteCheckpointer | undefined;

  constructor(
    private readonly raw: Database.Database,
    private readonly file?: string,
  ) {}

  /** a write was committed: past COMMITS_BEFORE_CHECKPOINT_WORKER, the worker checkpoints and commits only append */
  private committed(): void {
    if (++this.commits !== COMMITS_BEFORE_CHECKPOINT_WORKER || !this.file) return;
    try {
      this.checkpointer = new SqliteCheckpointer(this.file);
      this.raw.pragma("wal_autocheckpoint = 0");
    } catch {
      this.checkpointer = undefined; // no worker: SQLite's own checkpoints, as before
    }
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.raw.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /**
   * Run a synchronous step now if no transaction of someone else is open, else after it. Outside a
   * transaction a step SQLite answers busy at once is tried again in the queue, so no one else's
   * transaction can be open on this connection while it waits (it would run inside it).
   */
  private async turn<T>(step: () => T): Promise<T> {
    if (this.inTransaction.getStore()) return step();
    if (!this.busy) {
      try {
        return step();
      } catch (err) {
        if (!isBusy(err)) throw err;
      }
    }
    return this.exclusive(async () => this.untilNotBusy(step));
  }

  /**
   * A statement outside a transaction (or a transaction's BEGIN) tried again when SQLite answers busy: the
   * connection has no busy handler (openSqlite), so another connection's lock (the checkpoint worker's,
   * another process's write) is waited out here, on a timer, 1 to 20 ms a time. SQLITE_BUSY_SNAPSHOT (the
   * WAL moved between this connection's read and its write) is tried again the same way. A statement
   * that answered busy did nothing, so running it again is safe. Inside a transaction nothing answers
   * busy: its BEGIN IMMEDIATE took the write lock.
   */
  private async untilNotBusy<T>(step: () => T): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return step();
      } catch (err) {
        if (!isBusy(err) || attempt >= BUSY_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, Math.min(attempt, 20)));
      }
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      this.busy = true;
      try {
        return await fn();
      } finally {
        this.busy = false;
      }
    });
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  all<T>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return this.turn(() => this.statement(sql).all(...bind(params)) as T[]);
  }

  get<T>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    return this.turn(() => this.statement(sql).get(...bind(params)) as T | undefined);
  }

  run(sql: string, ...params: SqlValue[]): Promise<{ changes: number }> {
    return this.turn(() => {
      const changes = this.statement(sql).run(...bind(params)).changes;
      if (!this.raw.inTransaction) this.committed(); // autocommitted
      return { changes };
    });
  }

  exec(sql: string): Promise<void> {
    return this.turn(() => {
      this.raw.exec(sql);
      this.statements.clear(); // a schema change invalidates prepared statements
    });
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inTransaction.getStore()) return fn(); // nested: joins the outer transaction
    return this.exclusive(async () => {
      await this.untilNotBusy(() => this.statement("BEGIN IMMEDIATE").run());
      try {
        const body = storeTransactionBody(fn);
        const result = await this.inTransaction.run(true, () => body.run());
        this.statement("COMMIT").run();
        this.committed();
        body.committed();
        return result;
      } catch (err) {
        if (this.raw.inTransaction) this.statement("ROLLBACK").run();
        throw err;
      }
    });
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    await this.exclusive(async () => {
      if (this.raw.open) this.raw.close();
    });
  }
}
