/**
 * A table as it is today (schema/tables/), and the one mapper its rows are read with on both dialects.
 *
 * `Row<T>` is the record a row reads as: each column under its camelCase name (or its `.as` name), typed by
 * its declaration. `rowReader(table)` reads a row of `SELECT *` (columns the table does not declare, such as
 * PostgreSQL's `rowid`, are left out); `rowReader(table, { pick })` a row of only those columns,
 * `{ omit }` all but those.
 */
import { readValue, type Column, type ColumnKind } from "./column";

export type Columns = Record<string, Column<any, string | undefined>>;

export interface TableOptions<C extends Columns> {
  /** a key of several columns (a one-column key is the column's `.primaryKey()`) */
  readonly primaryKey?: readonly (keyof C & string)[];
  readonly unique?: readonly (readonly (keyof C & string)[])[];
  /**
   * Rows are read back in insertion order (`ORDER BY ..., rowid`): SQLite's implicit rowid, a `rowid`
   * identity column on PostgreSQL (schema/dialect.ts).
   */
  readonly insertionOrder?: boolean;
}

export class Table<C extends Columns = Columns> {
  constructor(
    readonly name: string,
    readonly columns: C,
    readonly options: TableOptions<C> = {},
  ) {}
}

type Camel<S extends string> = S extends `${infer H}_${infer R}` ? `${H}${Capitalize<Camel<R>>}` : S;
type PropertyOf<K extends string, Col> = Col extends Column<unknown, infer P> ? (P extends string ? P : Camel<K>) : never;

export type Row<C extends Columns> = { -readonly [K in keyof C & string as PropertyOf<K, C[K]>]: C[K]["__value"] };
export type RowOf<T> = T extends Table<infer C> ? Row<C> : never;

export const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

type Selection<C extends Columns, K extends keyof C & string> = { pick: readonly K[] } | { omit: readonly K[] };

export function rowReader<C extends Columns>(table: Table<C>): (raw: unknown) => Row<C>;
export function rowReader<C extends Columns, K extends keyof C & string>(table: Table<C>, s: { pick: readonly K[] }): (raw: unknown) => Row<Pick<C, K>>;
export function rowReader<C extends Columns, K extends keyof C & string>(table: Table<C>, s: { omit: readonly K[] }): (raw: unknown) => Row<Omit<C, K>>;
export function rowReader<C extends Columns, K extends keyof C & string>(table: Table<C>, s?: Selection<C, K>): (raw: unknown) => unknown {
  const listed = (list: readonly string[], n: string) => list.includes(n);
  const names = Object.keys(table.columns).filter((n) => !s || ("pick" in s ? listed(s.pick, n) : !listed(s.omit, n)));
  const fields: [string, string, ColumnKind][] = names.map((n) => [n, table.columns[n]!.spec.property ?? camel(n), table.columns[n]!.spec.kind]);
  return (raw) => {
    const r = raw as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [name, property, kind] of fields) out[property] = readValue(kind, r[name]);
    return out;
  };
}
