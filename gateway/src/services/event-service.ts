/**
 * A treasury's events as its clients read them: the log page by page (`?after=`), the log as a stream that
 * waits for what comes next (Server-Sent Events, resumed from `Last-Event-ID`), and the webhook endpoints
 * that receive it (registered with a secret shown once, listed, deleted, enabled again, sent a test event).
 */
import { randomBytes } from "node:crypto";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import type { EventType, TreasuryEvent } from "@treasury/core/schemas/events";
import { checkWebhookUrl } from "../events/webhook-target";
import type { WebhookEndpoint } from "../store/webhook-store";
import type { ServiceContext } from "./context";

/** at most this many webhook endpoints per treasury */
export const MAX_WEBHOOKS = 10;

export interface WebhookView {
  id: string;
  url: string;
  types: EventType[] | null;
  status: "enabled" | "disabled";
  disabled_reason: string | null;
  created_at: string;
}

const view = (e: WebhookEndpoint): WebhookView => ({
  id: e.id,
  url: e.url,
  types: e.types,
  status: e.status === "disabled" ? "disabled" : "enabled",
  disabled_reason: e.disabledReason,
  created_at: e.createdAt,
});

export class EventService {
  /** aborted when the process closes: every stream ends */
  private readonly closing = new AbortController();

  constructor(private readonly ctx: ServiceContext<"events" | "webhooks">) {}

  /** wake `fn` with the treasury of every event this process commits */
  onAppended(fn: (treasuryId: string) => void): () => void {
    return this.ctx.stores.events.onAppended(fn);
  }

  /** the last sequence of each of these treasuries' logs (0: none yet) */
  lastSequences(treasuryIds: readonly string[]): Promise<Map<string, number>> {
    return this.ctx.stores.events.lastSequences(treasuryIds);
  }

  /** end every stream (the server is closing) */
  close(): void {
    this.closing.abort();
  }

  /** a page of the treasury's log after `after` (a sequence number), oldest first */
  async page(
    treasuryId: string,
    after: number,
    limit: number,
  ): Promise<{ treasury_id: string; data: TreasuryEvent[]; last_sequence: number; next_after: number; has_more: boolean }> {
    const [rows, last] = await Promise.all([this.ctx.stores.events.after(treasuryId, after, limit + 1), this.ctx.stores.events.lastSequence(treasuryId)]);
    const data = rows.slice(0, limit);
    return { treasury_id: treasuryId, data, last_sequence: last, next_after: data.at(-1)?.sequence ?? after, has_more: rows.length > limit };
  }

  /**
   * Write the treasury's events after `after` to `send`, oldest first, then each one as it commits, until
   * `signal` aborts. Woken at once by an event this process committed; every `pollMs` it also looks for
   * what other instances wrote.
   */
  async follow(treasuryId: string, after: number, send: (e: TreasuryEvent) => void, until: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([until, this.closing.signal]);
    let last = after;
    let wake: (() => void) | undefined;
    let appended = false; // an event committed while the log was being read: read again before waiting
    const unsubscribe = this.ctx.stores.events.onAppended((id) => {
      if (id !== treasuryId) return;
      appended = true;
      wake?.();
    });
    const onAbort = () => wake?.();
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        appended = false;
        const batch = await this.ctx.stores.events.after(treasuryId, last, 100);
        for (const e of batch) {
          if (signal.aborted) return;
          send(e);
          last = e.sequence;
        }
        if (batch.length === 100 || appended) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.ctx.config.events.pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      unsubscribe();
      signal.removeEventListener("abort", onAbort);
    }
  }

  async registerWebhook(treasuryId: string, req: { url: string; types?: EventType[] }): Promise<WebhookView & { secret: string }> {
    const url = checkWebhookUrl(req.url, { allowLoopback: this.ctx.config.events.allowLoopbackWebhooks }).toString();
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const id = newId("whk");
    const at = this.ctx.clock.now().toISOString();
    const types = req.types && req.types.length > 0 ? [...new Set(req.types)] : null;
    await this.ctx.tx.transaction(async () => {
      if ((await this.ctx.stores.webhooks.count(treasuryId)) >= MAX_WEBHOOKS) {
        throw new TreasuryError("invalid_request", `a treasury has at most ${MAX_WEBHOOKS} webhook endpoints; delete one first`);
      }
      await this.ctx.stores.webhooks.insert({ id, treasuryId, url, secret, types, at });
    });
    return { id, url, types, status: "enabled", disabled_reason: null, created_at: at, secret };
  }

  async webhooks(treasuryId: string): Promise<WebhookView[]> {
    return (await this.ctx.stores.webhooks.list(treasuryId)).map(view);
  }

  async deleteWebhook(treasuryId: string, id: string): Promise<void> {
    if (!(await this.ctx.stores.webhooks.delete(treasuryId, id, this.ctx.clock.now().toISOString()))) throw notFound(id);
  }

  /** a disabled endpoint enabled again: what it missed is delivered, in order */
  async enableWebhook(treasuryId: string, id: string): Promise<WebhookView> {
    const endpoint = await this.ctx.stores.webhooks.get(treasuryId, id);
    if (!endpoint) throw notFound(id);
    await this.ctx.stores.webhooks.enable(treasuryId, id, this.ctx.clock.now().toISOString());
    return view((await this.ctx.stores.webhooks.get(treasuryId, id))!);
  }

  /** a `webhook.test` event in the treasury's log, delivered to this endpoint only */
  async testWebhook(treasuryId: string, id: string): Promise<TreasuryEvent> {
    const endpoint = await this.ctx.stores.webhooks.get(treasuryId, id);
    if (!endpoint) throw notFound(id);
    const event = await this.ctx.stores.events.append(treasuryId, "webhook.test", { webhook_id: id }, { onlyEndpoint: id, now: this.ctx.clock.now() });
    return event!;
  }
}

const notFound = (id: string) => new TreasuryError("not_found", `no webhook endpoint ${id} for this treasury`);
