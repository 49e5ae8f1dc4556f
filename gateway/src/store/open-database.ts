/**
 * Opening the store: the backend a location names (store/sqlite-db.ts,
 * store/postgres-db.ts), migrated to its dialect's rendering of the one
 * schema history (store/migrations.ts, from store/schema/). The contract
 * every backend implements is store/db.ts.
 */
import type { DatabaseLocation, Db } from "./db";
import type { Migration } from "./migration";
import { MIGRATIONS, migrationsFor, POSTGRES_MIGRATIONS } from "./migrations";
import { openPostgres } from "./postgres-db";
import { openSqlite } from "./sqlite-db";

export { migrationsFor };

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
    const applied = await db.transaction(
      async () => {
        await queue(); // the first applies it, the rest find it applied

        if (await db.get("SELECT 1 AS one FROM schema_migrations WHERE version = ?", m.version)) return false;
        await db.exec(m.sql);
        await db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", m.version, m.name, new Date().toISOString());
        return true;
      },
      { isolation: "read committed" },
    );
    if (applied) ran.push(m.version);
  }
  return ran;
}

export async function schemaVersion(db: Db): Promise<number> {
  const row = await db.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_migrations");
  return row?.v ?? 0;
}
