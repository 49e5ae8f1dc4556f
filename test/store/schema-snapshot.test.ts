/**
 * The schema every migration leaves, on both backends, read back from the database (test/store/schema-dump.ts)
 * and held to the snapshots in schema-snapshot/: captured from the two hand-written migration files before the
 * schema was declared once (gateway/src/store/schema/), so a rendering that drifts from what the kept stores
 * already hold shows here. Each version is held, not only the last: a database kept at any version goes on
 * from exactly that schema. SQLite runs in every pass; PostgreSQL with TEST_STORE=postgres.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Db } from "../../gateway/src/store/db";
import { migrate, migrationsFor } from "../../gateway/src/store/open-database";
import { openPostgres } from "../../gateway/src/store/postgres-db";
import { openSqlite } from "../../gateway/src/store/sqlite-db";
import { emptyDatabase, TEST_STORE } from "../helpers/store";
import { dumpSchema } from "./schema-dump";

/** a dump's lists as one list of lines, each named by its list (`objects: ...`, `columns: ...`) */
const lines = (dump: Record<string, unknown>): string[] =>
  Object.entries(dump).flatMap(([list, items]) => (Array.isArray(items) ? items.map((i) => `${list}: ${String(i)}`) : []));

/**
 * Migrating one version at a time, what each version of the dialect's history changed in the schema (the
 * lines it added and removed), then the final schema in full, with the PRAGMA view (SQLite) and seeded rows.
 */
async function schemaByVersion(db: Db): Promise<Record<string, unknown>> {
  const history = migrationsFor(db.dialect);
  const out: Record<string, unknown> = {};
  let before: string[] = [];
  for (const m of history) {
    expect(
      await migrate(
        db,
        history.filter((h) => h.version <= m.version),
      ),
    ).toEqual([m.version]);
    const after = lines(await dumpSchema(db));
    out[`v${m.version} ${m.name}`] = { removed: before.filter((l) => !after.includes(l)), added: after.filter((l) => !before.includes(l)) };
    before = after;
  }
  out.final = await dumpSchema(db);
  return out;
}

describe("the migrated schema", () => {
  it("SQLite: every version's schema is the snapshot's", async () => {
    const db = openSqlite(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "schema-")), "db.sqlite"));
    try {
      await expect(JSON.stringify(await schemaByVersion(db), null, 1)).toMatchFileSnapshot("./schema-snapshot/sqlite.json");
    } finally {
      await db.close();
    }
  });

  it.skipIf(TEST_STORE !== "postgres")("PostgreSQL: every version's schema is the snapshot's", async () => {
    const location = await emptyDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "schema-")));
    const db = await openPostgres((location as { url: string }).url, { max: 2 });
    try {
      await expect(JSON.stringify(await schemaByVersion(db), null, 1)).toMatchFileSnapshot("./schema-snapshot/postgres.json");
    } finally {
      await db.close();
    }
  });
});
