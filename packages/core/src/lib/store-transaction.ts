/**
 * A store transaction does nothing outside the database (gateway/src/store/db.ts): SQLite's one writer, or a
 * PostgreSQL row lock, must never wait on a node's answer. Both backends run a transaction's body under the
 * mark below (`insideStoreTransaction`); the one HTTP POST every chain client and the facilitator client make
 * (lib/keep-alive-post.ts, chain/rpc-transport.ts) asks `refuseInsideStoreTransaction` first and throws
 * when the mark is set. A body that calls the chain fails at once, in tests and in production alike;
 * `STRICT_STORE_TRANSACTIONS=0` turns the refusal off. The check is one AsyncLocalStorage read per request.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** an open transaction's body: what is to run once it has committed */
interface Frame {
  afterCommit: (() => void)[];
}

const mark = new AsyncLocalStorage<Frame>();

/** the message of the refusal */
export const CHAIN_CALL_IN_TRANSACTION = "chain call inside a store transaction";

/**
 * Run a store transaction's body under the mark (the backends' `transaction`); the backend calls `committed()`
 * once its COMMIT succeeded, which runs what the body asked to run after it (`afterCommit`). A body that rolls
 * back (or is run again after a collision: a new frame each time) runs none of it.
 */
export function storeTransactionBody<T>(fn: () => Promise<T>): { run(): Promise<T>; committed(): void } {
  const frame: Frame = { afterCommit: [] };
  return {
    run: () => (mark.getStore() ? fn() : mark.run(frame, fn)),
    committed: () => {
      for (const f of frame.afterCommit.splice(0)) {
        try {
          f();
        } catch {
          // a notification's failure is not the transaction's
        }
      }
    },
  };
}

/** is this code running inside a store transaction's body? */
export const inStoreTransaction = (): boolean => mark.getStore() !== undefined;

/**
 * Run `fn` once the store transaction this code runs in has committed (at once, outside one): a notification
 * of what the transaction wrote (the event log wakes its readers) never tells of a write that rolled back.
 */
export function afterCommit(fn: () => void): void {
  const frame = mark.getStore();
  if (frame) frame.afterCommit.push(fn);
  else fn();
}

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
