/**
 * Records that only matter for a while are swept, so tables do not grow with
 * traffic: idempotency records past their retention (24 h), rate-limit windows
 * that ended, settled x402 payments a week after settlement (the chain refuses
 * their nonces by then; locks awaiting reconciliation are never swept),
 * position samples after 30 days (the console's chart reads the recent ones),
 * instances a day after their last heartbeat. Every
 * instance sweeps (each DELETE is idempotent); the first sweep runs at start.
 */
import type { Clock } from "../lib/clock";
import type { IdempotencyStore } from "./idempotency-store";
import { INSTANCE_RETENTION_MS, type InstanceStore } from "./instance-store";
import type { PaymentStore } from "./payment-store";
import type { PositionSampleStore } from "./position-sample-store";
import type { RateLimitStore } from "./rate-limit-store";

export const PAYMENT_RETENTION_MS = 7 * 86_400_000;
export const SAMPLE_RETENTION_MS = 30 * 86_400_000;

export interface Swept {
  idempotency: number;
  rate_limit_windows: number;
  payments: number;
  position_samples: number;
  instances: number;
}

export async function sweepExpired(
  stores: { idempotency: IdempotencyStore; rateLimits: RateLimitStore; payments: PaymentStore; positionSamples: PositionSampleStore; instances: InstanceStore },
  now: Date,
): Promise<Swept> {
  return {
    idempotency: await stores.idempotency.purgeExpired(now),
    rate_limit_windows: await stores.rateLimits.purgeExpired(now.getTime()),
    payments: await stores.payments.purgeSettledBefore(new Date(now.getTime() - PAYMENT_RETENTION_MS)),
    position_samples: await stores.positionSamples.purgeOlderThan(new Date(now.getTime() - SAMPLE_RETENTION_MS).toISOString()),
    instances: await stores.instances.purgeBefore(new Date(now.getTime() - INSTANCE_RETENTION_MS)),
  };
}

/** sweep now and every `everyMs`; the stop waits for a sweep in progress */
export function startSweeper(
  stores: Parameters<typeof sweepExpired>[0],
  clock: Clock,
  everyMs: number,
  log: (swept: Swept | Error) => void,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= sweepExpired(stores, clock.now())
      .then(log, (err: unknown) => log(err instanceof Error ? err : new Error(String(err))))
      .finally(() => (running = undefined));
  };
  sweep();
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
