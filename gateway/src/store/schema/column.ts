/**
 * A column, declared once: what it holds (its kind), its constraints, and the TypeScript type a row's value
 * is read as. The kind decides the SQL type in each dialect (schema/dialect.ts) and how a value read from
 * either driver becomes the record's (`readValue`): money is exact decimal text read as a bigint, JSON is text
 * read parsed, a flag is 0/1 read as a boolean, numbers are read with Number() whatever the driver gave.
 *
 * A column is nullable until `.notNull()` or `.primaryKey()`; `.oneOf([...])` is both the CHECK the database
 * enforces and the union the value is typed as. `.as("name")` names the record's property when it is not
 * the column's name in camelCase. Constraints render in one fixed order: type, PRIMARY KEY, NOT NULL,
 * UNIQUE, DEFAULT, CHECK, REFERENCES.
 */

/** what a column holds (its SQL type per dialect: schema/dialect.ts) */
export type ColumnKind =
  | "text" // any text, an ISO-8601 timestamp included (sortable as text on both)
  | "money" // an exact integer amount (micro-USDC, token units) as decimal text, read as a bigint
  | "json" // a JSON document as text, read parsed
  | "integer"
  | "flag" // a boolean as the integer 0 or 1
  | "real" // a float (health scores, LTVs, USD gas estimates), never money
  | "epoch_ms" // milliseconds since the epoch, past 32 bits
  | "serial"; // an integer key the database numbers in insertion order

export interface ColumnSpec {
  readonly kind: ColumnKind;
  readonly primaryKey: boolean;
  readonly notNull: boolean;
  readonly unique: boolean;
  /** a SQL literal, as written after DEFAULT */
  readonly default?: string;
  /** the values the column may hold (rendered `col IN (...)`, `col IS NULL OR col IN (...)` when nullable) */
  readonly oneOf?: readonly string[];
  /** any other CHECK, in the SQL both dialects share */
  readonly check?: string;
  /** `table(column)` */
  readonly references?: string;
  /** the record's property, when not the column's name in camelCase */
  readonly property?: string;
}

/** `T` is the value's type as read; `P` the record's property name, when it is not the camelCase of the column's */
export class Column<T, P extends string | undefined = undefined> {
  declare readonly __value: T;
  declare readonly __property: P;
  constructor(readonly spec: ColumnSpec) {}

  private with<U, Q extends string | undefined = P>(patch: Partial<ColumnSpec>): Column<U, Q> {
    return new Column<U, Q>({ ...this.spec, ...patch });
  }

  notNull(): Column<Exclude<T, null>, P> {
    return this.with({ notNull: true });
  }

  primaryKey(): Column<Exclude<T, null>, P> {
    return this.with({ primaryKey: true });
  }

  unique(): Column<T, P> {
    return this.with({ unique: true });
  }

  default(literal: string): Column<T, P> {
    return this.with({ default: literal });
  }

  oneOf<const V extends readonly string[]>(values: V): Column<V[number] | (null extends T ? null : never), P> {
    return this.with({ oneOf: values });
  }

  check(sql: string): Column<T, P> {
    return this.with({ check: sql });
  }

  references(target: string): Column<T, P> {
    return this.with({ references: target });
  }

  as<const Q extends string>(property: Q): Column<T, Q> {
    return this.with<T, Q>({ property });
  }
}

const column = <T>(kind: ColumnKind): Column<T | null> => new Column({ kind, primaryKey: false, notNull: false, unique: false });

export const text = <T extends string = string>() => column<T>("text");
/** an ISO-8601 instant, text on both dialects: compared and ordered as text */
export const timestamp = () => column<string>("text");
export const money = () => column<bigint>("money");
/** `T` defaults to `any`, as JSON.parse gives: the store's record type says what the document is */
export const json = <T = any>() => column<T>("json");
export const integer = () => column<number>("integer");
export const flag = () => column<boolean>("flag");
export const real = () => column<number>("real");
export const epochMs = () => column<number>("epoch_ms");
export const serial = () => column<number>("serial").primaryKey();

/** a definition as comparable text, whatever order it was built in, without the `omit`ted parts */
export function specKey(spec: ColumnSpec, omit: readonly (keyof ColumnSpec)[] = []): string {
  const keys = (Object.keys(spec) as (keyof ColumnSpec)[]).filter((k) => spec[k] !== undefined && !omit.includes(k)).sort();
  return JSON.stringify(keys.map((k) => [k, spec[k]]));
}

const READ: Record<ColumnKind, (v: unknown) => unknown> = {
  text: (v) => v,
  money: (v) => BigInt(v as string),
  json: (v) => JSON.parse(v as string),
  integer: Number,
  flag: (v) => Number(v) === 1,
  real: Number,
  epoch_ms: Number, // a BIGINT arrives as a number already (store/postgres-db.ts parses int8); a string would too
  serial: Number,
};

/** a value as either driver returned it, as the record holds it; NULL stays null */
export function readValue(kind: ColumnKind, v: unknown): unknown {
  return v === null || v === undefined ? null : READ[kind](v);
}
