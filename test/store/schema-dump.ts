/**
 * What a migrated database's schema is, read back from the database itself (never from the migrations), in a
 * form two databases can be compared by: SQLite's `sqlite_master` (whitespace collapsed) with the PRAGMA view of
 * each table; PostgreSQL's information_schema columns, pg_indexes, pg_constraint, triggers, functions and
 * sequences. Rows the migrations themselves write (the fee ratchet's, the history's names) are part of it.
 */
import type { Db } from "../../gateway/src/store/db";

/** whitespace runs to one space, none just inside parentheses: the text a statement was written with, laid out any way */
export const normalizeSql = (sql: string | null): string | null =>
  sql === null ? null : sql.replace(/\s+/g, " ").replace(/\(\s/g, "(").replace(/\s\)/g, ")").trim();

export async function dumpSchema(db: Db): Promise<Record<string, unknown>> {
  const seeded = {
    schema_migrations: await db.all("SELECT version, name FROM schema_migrations ORDER BY version"),
    fee_ratchet: await db.all("SELECT * FROM fee_ratchet ORDER BY id"),
  };
  return db.dialect === "sqlite" ? { ...(await dumpSqlite(db)), seeded } : { ...(await dumpPostgres(db)), seeded };
}

async function dumpSqlite(db: Db): Promise<Record<string, unknown>> {
  const objects = await db.all<{ type: string; name: string; tbl_name: string; sql: string | null }>(
    "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_sequence' ORDER BY type, name",
  );
  const tables: Record<string, unknown> = {};
  for (const t of objects.filter((o) => o.type === "table")) {
    const indexes = await db.all<{ name: string; unique: number; origin: string; partial: number }>(
      `SELECT name, "unique", origin, partial FROM pragma_index_list('${t.name}') ORDER BY name`,
    );
    tables[t.name] = {
      columns: (await db.all(`SELECT cid, name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo('${t.name}') ORDER BY cid`)).map((c) =>
        Object.values(c).join(" | "),
      ),
      foreignKeys: (await db.all(`SELECT "from", "table", "to", on_update, on_delete FROM pragma_foreign_key_list('${t.name}') ORDER BY "from"`)).map((f) =>
        Object.values(f).join(" | "),
      ),
      indexes: await Promise.all(
        indexes.map(async (i) => {
          const cols = await db.all<{ name: string | null; desc: number; key: number }>(
            `SELECT name, "desc", "key" FROM pragma_index_xinfo('${i.name}') ORDER BY seqno`,
          );
          return `${i.name} unique=${i.unique} origin=${i.origin} partial=${i.partial} (${cols.map((c) => `${c.name ?? "<expr>"}${c.desc ? " desc" : ""}${c.key ? "" : " aux"}`).join(", ")})`;
        }),
      ),
    };
  }
  return { objects: objects.map((o) => `${o.type} ${o.name} on ${o.tbl_name}: ${normalizeSql(o.sql)}`), tables };
}

async function dumpPostgres(db: Db): Promise<Record<string, unknown>> {
  const lines = async (sql: string) =>
    (await db.all<Record<string, unknown>>(sql)).map((r) =>
      Object.values(r)
        .map((v) => (typeof v === "string" ? normalizeSql(v) : String(v)))
        .join(" | "),
    );
  return {
    columns: await lines(
      `SELECT table_name, ordinal_position, column_name, data_type, is_nullable, column_default, is_identity, identity_generation
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    ),
    indexes: await lines("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname"),
    constraints: await lines(
      `SELECT conrelid::regclass::text AS tbl, conname, contype, pg_get_constraintdef(oid) AS def
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY tbl, conname`,
    ),
    triggers: await lines(
      "SELECT tgrelid::regclass::text AS tbl, tgname, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE NOT tgisinternal ORDER BY tbl, tgname",
    ),
    functions: await lines("SELECT proname, pg_get_functiondef(oid) AS def FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY proname"),
    sequences: await lines(
      "SELECT sequencename, data_type, start_value, increment_by, cycle FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename",
    ),
  };
}
