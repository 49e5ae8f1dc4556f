/**
 * What the schemes' `validNow` share: whether the store has a row of a payment (a store that fails answers
 * "seen": the proof names nobody), and one turn of the event loop (a store query just made leaves before the
 * CPU recovers a signature, so the two overlap).
 */
import type { SchemeEnv } from "./scheme";

/** no row of this payment in the store */
export const unseen = (env: Pick<SchemeEnv, "ctx">, payer: string, nonce: string): Promise<boolean> =>
  env.ctx.stores.payments.seen(payer, nonce).then(
    (seen) => !seen,
    () => false,
  );

export const oneTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
