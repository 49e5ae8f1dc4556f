/**
 * The statements both dialects write alike, given what a dialect says of itself (`DialectRules`, stated in
 * schema/dialect.ts): a column's definition, CREATE TABLE and CREATE INDEX. Also the shape of a table as the
 * history has built it so far (`TableState`), which the renderer (schema/render.ts) keeps per dialect.
 */
import type { Dialect } from "../db";
import type { ColumnKind, ColumnSpec } from "./column";

export interface IndexDef {
  readonly name: string;
  readonly table: string;
  /** columns or expressions (`lower(safe)`), in the SQL both dialects share */
  readonly columns: readonly string[];
  readonly unique: boolean;
  readonly where?: string;
}

/** a trigger refusing an update that lowers `column` */
export interface OneWay {
  readonly name: string;
  readonly table: string;
  readonly column: string;
  readonly message: string;
}

/** a table as the history has built it so far, on one dialect */
export interface TableState {
  readonly name: string;
  columns: [string, ColumnSpec][];
  primaryKey?: readonly string[];
  unique?: readonly (readonly string[])[];
  insertionOrder: boolean;
  indexes: IndexDef[];
  triggers: string[];
}

/** everything one dialect does its own way; the rest is this file's, shared */
export interface DialectRules {
  readonly dialect: Dialect;
  /** the first version of its history: the steps of earlier versions are folded into it */
  readonly firstVersion: number;
  /** the SQL type of each kind of column */
  readonly types: Record<Exclude<ColumnKind, "serial">, string>;
  /** the whole definition (after the name) of an integer key the database numbers */
  readonly serial: string;
  /** what gives a table's rows an insertion order read back as `rowid` */
  insertionOrder(table: string): string[];
  oneWay(t: OneWay): string[];
  dropOneWay(t: OneWay): string[];
  /** give `column` its new definition (`after`), the table otherwise as it was (`before`) */
  changeColumn(before: TableState, after: TableState, column: string): string[];
}

const quote = (v: string): string => {
  if (!/^[a-z0-9_]+$/.test(v)) throw new Error(`not a plain value for a CHECK list: ${v}`);
  return `'${v}'`;
};

/** a column's CHECK: the `oneOf` list (NULL allowed in so many words when the column is nullable), then any other */
export function checksOf(name: string, spec: ColumnSpec): string[] {
  const out: string[] = [];
  if (spec.oneOf) out.push(`${spec.notNull ? "" : `${name} IS NULL OR `}${name} IN (${spec.oneOf.map(quote).join(",")})`);
  if (spec.check) out.push(spec.check);
  return out;
}

/** type, PRIMARY KEY, NOT NULL, UNIQUE, DEFAULT, CHECK, REFERENCES: the order the history has always written */
export function columnSql(name: string, spec: ColumnSpec, rules: DialectRules): string {
  if (spec.kind === "serial") return `${name} ${rules.serial}`;
  const parts = [name, rules.types[spec.kind]];
  if (spec.primaryKey) parts.push("PRIMARY KEY");
  if (spec.notNull) parts.push("NOT NULL");
  if (spec.unique) parts.push("UNIQUE");
  if (spec.default !== undefined) parts.push(`DEFAULT ${spec.default}`);
  for (const c of checksOf(name, spec)) parts.push(`CHECK (${c})`);
  if (spec.references) parts.push(`REFERENCES ${spec.references}`);
  return parts.join(" ");
}

export function createTableSql(name: string, t: TableState, rules: DialectRules): string {
  const lines = t.columns.map(([n, spec]) => columnSql(n, spec, rules));
  if (t.primaryKey) lines.push(`PRIMARY KEY (${t.primaryKey.join(", ")})`);
  for (const u of t.unique ?? []) lines.push(`UNIQUE (${u.join(", ")})`);
  return `CREATE TABLE ${name} (\n  ${lines.join(",\n  ")}\n)`;
}

export function indexSql(ix: IndexDef): string {
  return `CREATE ${ix.unique ? "UNIQUE " : ""}INDEX ${ix.name} ON ${ix.table} (${ix.columns.join(", ")})${ix.where ? ` WHERE ${ix.where}` : ""}`;
}
