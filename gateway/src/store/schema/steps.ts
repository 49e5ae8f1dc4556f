/**
 * The steps a schema version is written in, once for both dialects (schema/history.ts). A step names
 * columns of a declared table (schema/tables/) and never restates their definitions: a table is created
 * with its declared columns up to one (`through`; the rest were added later, always at the end), a column
 * added or changed takes its declared definition. A definition the database held before a later change is
 * given where the table was created (`was`). `only(dialect, ...)` is the rare step one dialect needs alone,
 * said so where it is written.
 */
import type { Dialect } from "../db";
import type { Column } from "./column";
import type { IndexDef, OneWay } from "./ddl";
import type { Columns, Table } from "./table";

export type Step =
  | {
      readonly op: "create_table";
      readonly table: Table;
      readonly through?: string;
      readonly was: Readonly<Record<string, Column<unknown, string | undefined>>>;
    }
  | { readonly op: "add_column"; readonly table: Table; readonly column: string }
  | { readonly op: "change_column"; readonly table: Table; readonly column: string }
  | { readonly op: "create_index"; readonly index: IndexDef }
  | { readonly op: "one_way"; readonly trigger: OneWay }
  | { readonly op: "drop_one_way"; readonly trigger: OneWay }
  | { readonly op: "insertion_order"; readonly table: Table }
  | { readonly op: "data"; readonly sql: string }
  | { readonly op: "only"; readonly dialect: Dialect; readonly why: string; readonly steps: readonly Step[] };

/** one version of the history: its number and name are the same on every dialect that has it */
export interface Version {
  readonly version: number;
  readonly name: string;
  readonly steps: readonly Step[];
}

type Name<C extends Columns> = keyof C & string;

export const createTable = <C extends Columns>(
  table: Table<C>,
  opts: { through?: Name<C>; was?: Partial<Record<Name<C>, Column<unknown, string | undefined>>> } = {},
): Step => ({
  op: "create_table",
  table: table as unknown as Table,
  through: opts.through,
  was: (opts.was ?? {}) as Record<string, Column<unknown, string | undefined>>,
});

export const addColumns = <C extends Columns>(table: Table<C>, ...columns: Name<C>[]): Step[] =>
  columns.map((column) => ({ op: "add_column", table: table as unknown as Table, column }));

/** the column takes its declared definition (on SQLite, a rebuild of the table) */
export const changeColumn = <C extends Columns>(table: Table<C>, column: Name<C>): Step => ({ op: "change_column", table: table as unknown as Table, column });

export const createIndex = <C extends Columns>(
  name: string,
  table: Table<C>,
  columns: (Name<C> | "rowid" | `${string}(${string})`)[],
  opts: { unique?: boolean; where?: string } = {},
): Step => ({
  op: "create_index",
  index: { name, table: table.name, columns, unique: opts.unique ?? false, where: opts.where },
});

export const oneWay = (trigger: OneWay): Step => ({ op: "one_way", trigger });
export const dropOneWay = (trigger: OneWay): Step => ({ op: "drop_one_way", trigger });

/** rows of the table are read back in insertion order (`rowid`): schema/dialect.ts says how each dialect keeps it */
export const insertionOrder = <C extends Columns>(table: Table<C>): Step => ({ op: "insertion_order", table: table as unknown as Table });

/** a statement on the rows, in the SQL both dialects share */
export const data = (sql: string): Step => ({ op: "data", sql });

export const only = (dialect: Dialect, why: string, ...steps: Step[]): Step => ({ op: "only", dialect, why, steps });
