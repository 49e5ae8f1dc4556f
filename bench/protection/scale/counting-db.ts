/** The gateway's Db with every query counted (all, get, run, exec; a transaction counts its queries, not itself) */
import type { Db } from "../../../gateway/src/store/db";

export interface CountingDb extends Db {
  queries(): number;
  reset(): void;
}

export function countingDb(db: Db): CountingDb {
  let n = 0;
  return {
    get dialect() {
      return db.dialect;
    },
    all: (sql, ...p) => (n++, db.all(sql, ...p)),
    get: (sql, ...p) => (n++, db.get(sql, ...p)),
    run: (sql, ...p) => (n++, db.run(sql, ...p)),
    exec: (sql) => (n++, db.exec(sql)),
    transaction: (fn, opts) => db.transaction(fn, opts),
    close: () => db.close(),
    queries: () => n,
    reset: () => {
      n = 0;
    },
  };
}
