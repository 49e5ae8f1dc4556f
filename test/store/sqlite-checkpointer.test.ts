/**
 * The embedded store checkpoints its WAL from a worker thread once it is busy
 * (gateway/src/store/sqlite-checkpointer.ts): commits on the request thread only
 * append, every committed write is in the file after a close and a reopen, and the
 * worker stops with the database.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { BUSY_ATTEMPTS, COMMITS_BEFORE_CHECKPOINT_WORKER, openSqlite } from "../../gateway/src/store/sqlite-db";

const until = async (what: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("WAL checkpoints off the request thread", () => {
  it("a short-lived database keeps SQLite's own checkpoints; a busy one hands them to the worker, which copies the WAL into the file", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-")), "db.sqlite");
    const db = openSqlite(file) as ReturnType<typeof openSqlite> & { checkpointer?: { state: { runs: number; lastCheckpointed: number; lastError?: string } } };
    await db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    const writes = COMMITS_BEFORE_CHECKPOINT_WORKER + 400;
    for (let i = 0; i < writes; i++) {
      if (i === COMMITS_BEFORE_CHECKPOINT_WORKER - 2) expect(db.checkpointer).toBeUndefined();
      if (i % 2) await db.run("INSERT INTO t (v) VALUES (?)", "x".repeat(500));
      else await db.transaction(async () => void (await db.run("INSERT INTO t (v) VALUES (?)", "y".repeat(500))));
    }
    expect(db.checkpointer).toBeDefined();
    expect((await db.get<{ wal_autocheckpoint: number }>("PRAGMA wal_autocheckpoint"))!.wal_autocheckpoint).toBe(0);
    await until(() => db.checkpointer!.state.lastCheckpointed > 0);
    expect(db.checkpointer!.state.lastError).toBeUndefined();
    await db.close();
    // every committed row is there, read by another connection after the close
    const check = new Database(file, { readonly: true });
    expect((check.prepare("SELECT COUNT(*) AS n FROM t").get() as { n: number }).n).toBe(writes);
    check.close();
  });

  it("another connection's write lock is waited out on a timer: the event loop keeps running, the transaction then commits once", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "busy-")), "db.sqlite");
    const db = openSqlite(file);
    await db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE"); // another connection (the checkpoint worker, another process) holds the write lock
    const started = Date.now();
    const tx = db.transaction(async () => void (await db.run("INSERT INTO t (v) VALUES ('mine')")));
    // the lock is let go by a timer of this same event loop: it fires only if nothing sleeps on the loop
    const fired = await new Promise<number>((resolve) =>
      setTimeout(() => {
        other.exec("INSERT INTO t (v) VALUES ('theirs'); COMMIT");
        resolve(Date.now() - started);
      }, 50),
    );
    await tx;
    const done = Date.now() - started;
    expect(fired).toBeLessThan(1000); // a busy handler on the connection would hold the loop for its whole timeout (5 s)
    expect(done).toBeLessThan(2000);
    expect(await db.all<{ v: string }>("SELECT v FROM t ORDER BY id")).toEqual([{ v: "theirs" }, { v: "mine" }]);
    other.close();
    await db.close();
  });

  it("a lock held past the retries is a busy error, not a hang", async () => {
    expect(BUSY_ATTEMPTS).toBeGreaterThan(100);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "busy-")), "db.sqlite");
    const db = openSqlite(file);
    await db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE");
    const started = Date.now();
    await expect(db.transaction(async () => void (await db.run("INSERT INTO t DEFAULT VALUES")))).rejects.toMatchObject({ code: "SQLITE_BUSY" });
    expect(Date.now() - started).toBeGreaterThan(3000);
    other.exec("ROLLBACK");
    other.close();
    expect(await db.transaction(async () => (await db.run("INSERT INTO t DEFAULT VALUES")).changes)).toBe(1);
    await db.close();
  }, 20_000);
});
