/**
 * The schema is declared once (gateway/src/store/schema/): the history's steps arrive, on both dialects, at
 * exactly the declared tables the stores read rows through; both dialects' histories carry the same versions
 * and names; a row reads the same whichever driver returned it. What each version leaves in a real database
 * is held by schema-snapshot.test.ts.
 */
import { describe, expect, it } from "vitest";
import { MIGRATIONS, POSTGRES_MIGRATIONS } from "../../gateway/src/store/migrations";
import { integer, json, money, text, flag, real, epochMs, serial, timestamp } from "../../gateway/src/store/schema/column";
import { DIALECTS, POSTGRES, SQLITE } from "../../gateway/src/store/schema/dialect";
import { HISTORY, TABLES } from "../../gateway/src/store/schema/history";
import { differences, render } from "../../gateway/src/store/schema/render";
import { changeColumn, createTable, oneWay } from "../../gateway/src/store/schema/steps";
import { rowReader, Table } from "../../gateway/src/store/schema/table";

describe("the schema, declared once", () => {
  it.each(["sqlite", "postgres"] as const)("%s: the history arrives at the declared tables, and only those", (dialect) => {
    expect(differences(TABLES, render(HISTORY, DIALECTS[dialect]).tables)).toEqual([]);
  });

  it("a declaration the history does not reach is told", () => {
    const shifted = TABLES.map((t) => (t.name === "instances" ? (new Table("instances", { ...t.columns, extra: text() }) as unknown as Table) : t));
    expect(differences(shifted, render(HISTORY, SQLITE).tables)).toEqual([expect.stringMatching(/^instances: columns /)]);
  });

  it("both dialects record the same versions under the same names; PostgreSQL's history starts at 5", () => {
    const names = (ms: typeof MIGRATIONS) => ms.map((m) => `${m.version} ${m.name}`);
    expect(names(MIGRATIONS)).toEqual(HISTORY.map((v) => `${v.version} ${v.name}`));
    expect(names(POSTGRES_MIGRATIONS)).toEqual(names(MIGRATIONS).filter((_, i) => HISTORY[i]!.version >= 5));
    expect(MIGRATIONS.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
  });

  it("a version with nothing to do on a dialect is still recorded (SQLite's 7)", () => {
    expect(MIGRATIONS.find((m) => m.version === 7)!.sql).toBe("SELECT 1;");
    expect(POSTGRES_MIGRATIONS.find((m) => m.version === 7)!.sql).toBe(
      "CREATE INDEX fee_audit_treasury_order ON fee_audit (treasury_id, created_at, rowid);\n",
    );
  });
});

describe("the dialect rules", () => {
  const t = new Table("t", { id: text().primaryKey(), kind: text().notNull().oneOf(["a", "b"]), n: integer() });
  const steps = (...s: ReturnType<typeof createTable>[]) => [{ version: 1, name: "one", steps: s }];

  it("a column changes its CHECK by a rebuild on SQLite, in place on PostgreSQL", () => {
    const history = steps(createTable(t, { was: { kind: text().notNull().oneOf(["a"]) } }), changeColumn(t, "kind"));
    expect(render(history, SQLITE).migrations[0]!.sql).toContain("DROP TABLE t;\nALTER TABLE t_new RENAME TO t;");
    expect(render(history, { ...POSTGRES, firstVersion: 1 }).migrations[0]!.sql).toContain(
      "ALTER TABLE t DROP CONSTRAINT t_kind_check;\nALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind IN ('a','b'));",
    );
  });

  it("PostgreSQL refuses to change anything but a CHECK in place; SQLite refuses to rebuild a table with a trigger", () => {
    const retyped = steps(createTable(t, { was: { n: real() } }), changeColumn(t, "n"));
    expect(() => render(retyped, { ...POSTGRES, firstVersion: 1 })).toThrow(/only a column's CHECK/);
    const guarded = steps(
      createTable(t, { was: { kind: text().notNull().oneOf(["a"]) } }),
      oneWay({ name: "g", table: "t", column: "n", message: "no" }),
      changeColumn(t, "kind"),
    );
    expect(() => render(guarded, SQLITE)).toThrow(/drop its triggers/);
  });

  it("every kind of column has its SQL type on each dialect", () => {
    const all = new Table("k", { a: text(), b: timestamp(), c: money(), d: json(), e: integer(), f: flag(), g: real(), h: epochMs() });
    const sql = (d: typeof SQLITE) =>
      render(steps(createTable(all)), { ...d, firstVersion: 1 })
        .migrations[0]!.sql.replace(/\s+/g, " ")
        .trim();
    expect(sql(SQLITE)).toBe("CREATE TABLE k ( a TEXT, b TEXT, c TEXT, d TEXT, e INTEGER, f INTEGER, g REAL, h INTEGER );");
    expect(sql(POSTGRES)).toBe("CREATE TABLE k ( a TEXT, b TEXT, c TEXT, d TEXT, e INTEGER, f INTEGER, g DOUBLE PRECISION, h BIGINT );");
  });
});

describe("a row, read through its declaration", () => {
  const t = new Table("t", {
    id: serial(),
    amount_micro: money().notNull(),
    doc: json<{ a: number }>(),
    armed: flag().notNull(),
    ratio: real(),
    reset_at: epochMs().notNull(),
    to_address: text().notNull().as("to"),
    note: text(),
  });
  const read = rowReader(t);

  it("reads each kind the same whichever driver's value it is given", () => {
    const want = { id: 7, amountMicro: 12345678901234567890n, doc: { a: 1 }, armed: true, ratio: 1.5, resetAt: 1_700_000_000_000, to: "0xabc", note: null };
    // better-sqlite3: numbers; node-postgres: int8 and float as the pool parses them, or as text
    expect(
      read({ id: 7, amount_micro: "12345678901234567890", doc: '{"a":1}', armed: 1, ratio: 1.5, reset_at: 1_700_000_000_000, to_address: "0xabc", note: null }),
    ).toEqual(want);
    expect(
      read({
        id: "7",
        amount_micro: "12345678901234567890",
        doc: '{"a":1}',
        armed: 1,
        ratio: "1.5",
        reset_at: "1700000000000",
        to_address: "0xabc",
        note: null,
        rowid: 3,
      }),
    ).toEqual(want);
    expect(read({ id: 1, amount_micro: "0", doc: null, armed: 0, ratio: null, reset_at: 0, to_address: "0x", note: "n" })).toEqual({
      id: 1,
      amountMicro: 0n,
      doc: null,
      armed: false,
      ratio: null,
      resetAt: 0,
      to: "0x",
      note: "n",
    });
  });

  it("reads only the columns picked, or all but those omitted", () => {
    expect(rowReader(t, { pick: ["armed", "note"] })({ armed: 1, note: null, id: 3 })).toEqual({ armed: true, note: null });
    expect(Object.keys(rowReader(t, { omit: ["doc", "ratio"] })({}))).toEqual(["id", "amountMicro", "armed", "resetAt", "to", "note"]);
  });
});
