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
import { COMMITS_BEFORE_CHECKPOINT_WORKER, openSqlite } from "../../gateway/src/store/sqlite-db";

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
});
