/**
 * A store transaction does nothing outside the database (gateway/src/store/db.ts): SQLite's one writer, or a
 * PostgreSQL row lock, must never wait on a node's answer. Both backends run a transaction's body under the
 * mark below (`insideStoreTransaction`); the one HTTP POST every chain client and the facilitator client make
 * (lib/keep-alive-post.ts, chain/rpc-transport.ts) asks `refuseInsideStoreTransaction` first and throws
 * when the mark is set. A body that calls the chain fails at once, in tests and in production alike;
 * `STRICT_STORE_TRANSACTIONS=0` turns the refusal off. The check is one AsyncLocalStorage read per request.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const mark = new AsyncLocalStorage<true>();

/** the message of the refusal */
export const CHAIN_CALL_IN_TRANSACTION = "chain call inside a store transaction";

/** run a store transaction's body under the mark (the backends' `transaction`) */
export function insideStoreTransaction<T>(fn: () => Promise<T>): Promise<T> {
  return mark.getStore() ? fn() : mark.run(true, fn);
}

/** is this code running inside a store transaction's body? */
export const inStoreTransaction = (): boolean => mark.getStore() === true;

/** the refusal: a programming error, named so that whoever wraps it (viem's HTTP error, the chain adapter) can say it */
export class ChainCallInTransaction extends Error {
  constructor(what: string) {
    super(`${CHAIN_CALL_IN_TRANSACTION} (${what})`);
    this.name = "ChainCallInTransaction";
  }
}

/** a call to a node or a facilitator, refused inside a store transaction (`what`: the URL's host, say) */
export function refuseInsideStoreTransaction(what: string): void {
  if (mark.getStore() && process.env.STRICT_STORE_TRANSACTIONS !== "0") throw new ChainCallInTransaction(what);
}
