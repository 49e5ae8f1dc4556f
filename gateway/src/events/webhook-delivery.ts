/**
 * The webhook delivery worker, run by every gateway instance on the shared store. A pass takes each
 * endpoint's oldest due delivery (store/webhook-store.ts: in order per treasury), claims it under a lease,
 * sends it (webhook-sender.ts) and records the outcome: delivered, or tried again after the next wait of the
 * retry schedule, or, once the schedule is spent (by default 8 attempts over about 27.6 hours), given up with
 * the endpoint disabled and the reason on it. An event committed in this process wakes the worker at once;
 * events of other processes are found by the poll.
 */
import type { Clock } from "../lib/clock";
import type { EventStore } from "../store/event-store";
import type { WebhookStore } from "../store/webhook-store";
import { sendWebhook } from "./webhook-sender";
import type { TargetPolicy } from "./webhook-target";

/** the waits after each failed attempt, in seconds (Standard Webhooks' schedule): 8 attempts over 99,305 s, about 27.6 hours */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;

export interface DeliveryOptions extends TargetPolicy {
  holder: string;
  timeoutMs: number;
  retryScheduleSeconds: readonly number[];
  pollMs: number;
  userAgent: string;
  /** endpoints sent to at once in a pass */
  parallel?: number;
}

export class WebhookDelivery {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly stores: { webhooks: WebhookStore; events: EventStore },
    private readonly clock: Clock,
    private readonly opts: DeliveryOptions,
    private readonly log: (err: unknown) => void = () => undefined,
  ) {}

  start(): void {
    this.unsubscribe = this.stores.events.onDelivery(() => this.wake());
    this.timer = setInterval(() => this.wake(), this.opts.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** run a pass now, or right after the one running */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.passes()
      .catch((err: unknown) => this.log(err))
      .finally(() => {
        this.running = undefined;
      });
  }

  private async passes(): Promise<void> {
    do {
      this.again = false;
      // a delivered head makes the endpoint's next event due at once: pass again while anything was sent
      while (!this.stopped && (await this.pass()) > 0);
    } while (this.again && !this.stopped);
  }

  /** one pass: each endpoint's due head, sent; how many were sent */
  async pass(): Promise<number> {
    const now = this.clock.now();
    const heads = await this.stores.webhooks.dueHeads(now.toISOString(), this.opts.parallel ?? 16);
    const sent = await Promise.all(heads.map((h) => this.attempt(h.endpointId, h.sequence)));
    return sent.filter(Boolean).length;
  }

  private async attempt(endpointId: string, sequence: number): Promise<boolean> {
    const now = this.clock.now();
    const lease = new Date(now.getTime() + this.opts.timeoutMs * 2 + 5_000);
    const due = await this.stores.webhooks.claim(endpointId, sequence, this.opts.holder, now.toISOString(), lease.toISOString());
    if (!due) return false;
    const outcome = await sendWebhook(due.endpoint, due.event, { ...this.opts, now });
    const at = this.clock.now();
    if (outcome.ok) {
      await this.stores.webhooks.delivered(endpointId, sequence, this.opts.holder, at.toISOString());
      return true;
    }
    const wait = this.opts.retryScheduleSeconds[due.attempts];
    const retryAt = wait === undefined ? undefined : new Date(at.getTime() + wait * 1_000).toISOString();
    await this.stores.webhooks.failed(endpointId, sequence, this.opts.holder, outcome.error, at.toISOString(), retryAt);
    return false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
