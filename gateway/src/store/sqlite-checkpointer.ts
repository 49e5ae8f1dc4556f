/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1,000 WAL pages: it copies the pages into
 * the database file and syncs it, on the request's thread. In the bench's
 * profile BEGIN/COMMIT were 15-18% of a write route's CPU, and a commit cost
 * about 165 us with the automatic checkpoint against 66 us without it
 * (bench/README.md). A worker thread with its own connection to the same
 * file checkpoints instead (PASSIVE every CHECKPOINT_EVERY_MS: it never
 * blocks the writer or a reader; TRUNCATE when the WAL has grown past
 * WAL_LIMIT_BYTES), so commits only append to the WAL. Durability is what it
 * was: in WAL mode with synchronous NORMAL the WAL is synced at each
 * checkpoint, now as often as before (a few times a second under load).
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

export const CHECKPOINT_EVERY_MS = 200;
export const WAL_LIMIT_BYTES = 64 * 1024 * 1024;

const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma("busy_timeout = 5000");
let runs = 0;
const timer = setInterval(() => {
  try {
    const big = fs.existsSync(workerData.file + "-wal") && fs.statSync(workerData.file + "-wal").size > workerData.walLimit;
    const [r] = db.pragma(big ? "wal_checkpoint(TRUNCATE)" : "wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ checkpointed: r.checkpointed, log: r.log, runs: ++runs });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
}, workerData.everyMs);
parentPort.on("message", (m) => {
  if (m === "stop") {
    clearInterval(timer);
    try { db.pragma("wal_checkpoint(PASSIVE)"); } catch {}
    db.close();
    parentPort.postMessage({ stopped: true });
  }
});
`;

export interface CheckpointerState {
  /** checkpoints the worker made */
  runs: number;
  /** WAL frames copied into the database by the last one */
  lastCheckpointed: number;
  lastError?: string;
}

/** a running checkpoint worker for one database file; `stop` waits for its last checkpoint and close */
export class SqliteCheckpointer {
  readonly state: CheckpointerState = { runs: 0, lastCheckpointed: 0 };
  private readonly worker: Worker;

  constructor(file: string) {
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { file, module: createRequire(import.meta.url).resolve("better-sqlite3"), everyMs: CHECKPOINT_EVERY_MS, walLimit: WAL_LIMIT_BYTES },
    });
    this.worker.unref();
    this.worker.on("message", (m: { checkpointed?: number; runs?: number; error?: string }) => {
      if (m.error) this.state.lastError = m.error;
      if (m.runs !== undefined) {
        this.state.runs = m.runs;
        this.state.lastCheckpointed = m.checkpointed ?? 0;
      }
    });
    this.worker.on("error", (err) => {
      this.state.lastError = String(err.message);
    });
  }

  async stop(): Promise<void> {
    const done = new Promise<void>((resolve) => {
      this.worker.once("exit", () => resolve());
      this.worker.on("message", (m: { stopped?: boolean }) => {
        if (m.stopped) void this.worker.terminate();
      });
    });
    this.worker.postMessage("stop");
    await Promise.race([done, new Promise<void>((r) => setTimeout(() => void this.worker.terminate().then(() => r()), 2000).unref())]);
  }
}
