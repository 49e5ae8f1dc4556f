/**
 * The shared backend: a node-postgres pool behind the async store contract.
 * Transactions are SERIALIZABLE, so a check-then-claim written once for both
 * backends means the same thing here as on SQLite's single writer, across any
 * number of instances; a serialization failure re-runs the transaction.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { storeTransactionBody } from "@treasury/core/lib/store-transaction";
import { isContention, type Db, type SqlValue, type TransactionOptions } from "./db";

/** a transaction that collided (store/db.ts `isContention`: SQLSTATE serialization_failure or deadlock_detected) is run again, this many times at most */
const MAX_ATTEMPTS = 20;

/** `?` placeholders become `$1..$n` (outside quoted literals) */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  let out = "";
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === "?") {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

const INT8_OID = 20;

export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? Number(process.env.DATABASE_POOL_MAX ?? 10),
    // COUNT(*) and bigint identities are int8: numbers here (money is stored as text, never as int8)
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
    },
  });
  // an idle client's connection error must not crash the process; the next query gets a fresh client
  pool.on("error", () => undefined);
  await pool.query("SELECT 1");
  return new PostgresDb(pool);
}

const bind = (params: SqlValue[]): unknown[] =>
  params.map((p) => (p === undefined ? null : typeof p === "bigint" ? p.toString() : typeof p === "boolean" ? (p ? 1 : 0) : p));

class PostgresDb implements Db {
  readonly dialect = "postgres" as const;
  private readonly client = new AsyncLocalStorage<pg.PoolClient>();
  private readonly texts = new Map<string, string>();

  constructor(private readonly pool: pg.Pool) {}

  private text(sql: string): string {
    let t = this.texts.get(sql);
    if (t === undefined) {
      t = numberPlaceholders(sql);
      this.texts.set(sql, t);
    }
    return t;
  }

  private query(sql: string, params: SqlValue[]): Promise<pg.QueryResult> {
    const runner = this.client.getStore() ?? this.pool;
    return runner.query(this.text(sql), bind(params));
  }

  async all<T>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[];
  }

  async get<T>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, ...params: SqlValue[]): Promise<{ changes: number }> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }

  async exec(sql: string): Promise<void> {
    await (this.client.getStore() ?? this.pool).query(sql);
  }

  async transaction<T>(fn: () => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    if (this.client.getStore()) return fn(); // nested: joins the outer transaction
    const isolation = opts.isolation === "read committed" ? "READ COMMITTED" : "SERIALIZABLE";
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let broken = false;
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
        const body = storeTransactionBody(fn);
        const result = await this.client.run(client, () => body.run());
        await client.query("COMMIT");
        body.committed();
        return result;
      } catch (err) {
        try {
          await client.query("ROLLBACK");
        } catch {
          broken = true;
        }
        if (!isContention(err) || attempt >= MAX_ATTEMPTS) throw err;
        // back off a little, with jitter, so contenders stop colliding
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 * attempt)));
      } finally {
        client.release(broken);
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
