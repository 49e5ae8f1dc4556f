/**
 * What a test reads or sets in the store where no store method or API says it: a row count, rows as they
 * are stored (to prove a secret is sealed at rest), a row aged past its expiry, a state no request reaches
 * (a legacy row, a tier reached elsewhere). Each is a query in the SQL both backends share, so one test
 * runs on SQLite and PostgreSQL alike and no test writes SQL of its own. `where` is equality on every
 * column it names; table and column names are checked, values are always parameters.
 */
import type { Db, SqlValue } from "../../gateway/src/store/db";

type Where = Record<string, SqlValue>;

const name = (n: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(n)) throw new Error(`not a table or column name: ${n}`);
  return n;
};

const clause = (where: Where): [string, SqlValue[]] => {
  const columns = Object.keys(where);
  return [columns.length ? ` WHERE ${columns.map((c) => `${name(c)} = ?`).join(" AND ")}` : "", Object.values(where)];
};

/** how many rows of `table` match `where` (all of them without it) */
export async function rowCount(db: Db, table: string, where: Where = {}): Promise<number> {
  const [sql, params] = clause(where);
  return Number((await db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${name(table)}${sql}`, ...params))!.n);
}

/** the rows of `table` that match `where`, as stored (raw columns, nothing decoded), in `orderBy` order when given */
export async function rowsOf<T = Record<string, unknown>>(
  db: Db,
  table: string,
  where: Where = {},
  opts: { columns?: string[]; orderBy?: string } = {},
): Promise<T[]> {
  const [sql, params] = clause(where);
  const columns = opts.columns?.map(name).join(", ") ?? "*";
  return db.all<T>(`SELECT ${columns} FROM ${name(table)}${sql}${opts.orderBy ? ` ORDER BY ${name(opts.orderBy)}` : ""}`, ...params);
}

/** set columns of the rows that match `where` straight in the store: a state no request reaches */
export async function setRow(db: Db, table: string, where: Where, values: Where): Promise<number> {
  const [sql, params] = clause(where);
  const sets = Object.keys(values)
    .map((c) => `${name(c)} = ?`)
    .join(", ");
  return (await db.run(`UPDATE ${name(table)} SET ${sets}${sql}`, ...Object.values(values), ...params)).changes;
}

/** age a time column (an expiry, a lease) of the rows that match `where` to `agoMs` before now: it has lapsed */
export async function ageRow(db: Db, table: string, where: Where, column = "expires_at", agoMs = 1000): Promise<number> {
  return setRow(db, table, where, { [column]: new Date(Date.now() - agoMs).toISOString() });
}

/**
 * The platform has reached fee tier `tierIndex` (only live, settled volume moves the ratchet; a test sets it
 * directly), with `platformVolumeMicro` when given. The ratchet is one-way: a tier already higher stays.
 */
export async function reachFeeTier(db: Db, tierIndex: number, platformVolumeMicro?: bigint): Promise<void> {
  const volume = platformVolumeMicro === undefined ? {} : { platform_volume_micro: platformVolumeMicro.toString() };
  const reached = (await db.get<{ tier_index: number }>("SELECT tier_index FROM fee_ratchet WHERE id = 1"))!.tier_index;
  await setRow(db, "fee_ratchet", { id: 1 }, { tier_index: Math.max(reached, tierIndex), ...volume });
}

/** SQLite: write the write-ahead log into the database file, so the file on disk holds everything (PostgreSQL: nothing to do) */
export async function checkpointWal(db: Db): Promise<void> {
  if (db.dialect === "sqlite") await db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}
