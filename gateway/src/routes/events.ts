/**
 * The authenticated treasury's events (extensions): the log as a page (`?after=`) or, with
 * `Accept: text/event-stream`, as Server-Sent Events resumed from `Last-Event-ID`; and its webhook endpoints.
 * The log is read with the treasury's key, its wallet's sign-in (free), or paid with x402 like a read (a paid
 * stream lasts PAID_STREAM_SECONDS, then the client reconnects with Last-Event-ID and pays again). Webhooks
 * are managed with the treasury's key: registering one shows its signing secret once.
 */
import { requireCredential } from "../http/credential";
import { EVENT_PAGE, EventList, EventsQuery, Webhook, WebhookCreate, WebhookCreated, WebhookIdParams, WebhookList } from "../schemas/events";
import type { EventService } from "../services/event-service";
import { z } from "@treasury/core/schemas/zod";
import { bearerRefusals, err, RATE_LIMITED, type RouteKit } from "./kit";

/** a stream paid for with x402 ends after this long (the client resumes with Last-Event-ID, paying again) */
export const PAID_STREAM_SECONDS = 600;
/** any other stream ends after this long (resumed the same way) */
export const STREAM_SECONDS = 3_600;
/** a comment line this often keeps proxies from closing an idle stream */
const KEEP_ALIVE_MS = 15_000;

const wantsStream = (accept: string | undefined) => (accept ?? "").includes("text/event-stream");

export function eventRoutes(kit: RouteKit, events: EventService): void {
  kit.route<unknown, z.infer<typeof EventsQuery>, unknown>({
    method: "get",
    path: "/api/v1/events",
    operationId: "getEvents",
    summary: "Events of the authenticated treasury: a page, or a Server-Sent Events stream (extension)",
    description: [
      "Extension of the spec: what happened to the treasury, in its log's order (`sequence` 1, 2, 3… without gaps; the types are listed in this document's webhooks).",
      "As JSON: a page of the events after `after`. With `Accept: text/event-stream`: every event after `Last-Event-ID` (or `after`), then each as it happens, one SSE message per event (`id` the sequence, `event` the type, `data` the event as JSON), with a comment every 15 s;",
      `a stream ends after ${STREAM_SECONDS} s (${PAID_STREAM_SECONDS} s when paid with x402) and resumes from its Last-Event-ID.`,
      "Without a key: pay with x402 like a read, or sign in free with the treasury's wallet (SIGN-IN-WITH-X).",
    ].join(" "),
    tags: ["Events"],
    security: "bearer_or_x402",
    price: { atomic: 1_400n, description: "Treasury events (a page, or a stream)" },
    siwx: true,
    extension: true,
    request: { query: EventsQuery },
    responses: {
      200: {
        description: "a page of events, oldest first; or, with Accept: text/event-stream, the stream (content type text/event-stream)",
        schema: EventList,
      },
      400: err("invalid after, limit or Last-Event-ID"),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    handler: async ({ req, res, query }) => {
      const credential = requireCredential(res);
      if (!wantsStream(req.header("accept"))) {
        return { status: 200, body: await events.page(credential.treasuryId, query.after ?? 0, query.limit ?? EVENT_PAGE.default) };
      }
      const lastEventId = req.header("last-event-id");
      const resumeFrom = lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId.trim()) ? Number(lastEventId.trim()) : (query.after ?? 0);
      const seconds = credential.kind === "x402" ? PAID_STREAM_SECONDS : STREAM_SECONDS;
      return {
        status: 200,
        body: undefined,
        headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" },
        stream: async (out) => {
          const done = new AbortController();
          req.on("close", () => done.abort());
          const ends = setTimeout(() => done.abort(), seconds * 1_000);
          const keepAlive = setInterval(() => out.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
          out.flushHeaders();
          out.write("retry: 2000\n\n");
          try {
            await events.follow(
              credential.treasuryId,
              resumeFrom,
              (e) => out.write(`id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`),
              done.signal,
            );
          } finally {
            clearTimeout(ends);
            clearInterval(keepAlive);
            out.end();
          }
        },
      };
    },
  });

  kit.route<z.infer<typeof WebhookCreate>, unknown, unknown>({
    method: "post",
    path: "/api/v1/webhooks",
    operationId: "createWebhook",
    summary: "Register a webhook endpoint for the authenticated treasury's events (extension)",
    description:
      "Each event is POSTed as JSON (the TreasuryEvent), signed as Standard Webhooks specifies (headers webhook-id, webhook-timestamp, webhook-signature), in the treasury's order, at least once: a receiver deduplicates on webhook-id. A delivery is retried with backoff (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts over about 27.6 hours) while later events wait; after the last, the endpoint is disabled and says why. The signing secret is in this answer only.",
    tags: ["Events"],
    security: "bearer",
    extension: true,
    request: {
      body: WebhookCreate,
      bodyRequired: true,
      example: { url: "https://agent.example/hooks/treasury", types: ["protection.acted", "health.zone_changed"] },
    },
    responses: {
      201: { description: "the endpoint, with its signing secret (shown once)", schema: WebhookCreated },
      400: err(
        "invalid body, more than 10 endpoints, or a URL the service will not call (webhook_url_refused: not https, a private, link-local or loopback address)",
      ),
      ...bearerRefusals(),
      ...RATE_LIMITED,
    },
    errors: ["webhook_url_refused"],
    handler: async ({ res, body }) => ({ status: 201, body: await events.registerWebhook(requireCredential(res).treasuryId, body) }),
  });

  kit.route({
    method: "get",
    path: "/api/v1/webhooks",
    operationId: "listWebhooks",
    summary: "The authenticated treasury's webhook endpoints (extension)",
    tags: ["Events"],
    security: "bearer",
    extension: true,
    responses: { 200: { description: "the endpoints, oldest first (never their secrets)", schema: WebhookList }, ...bearerRefusals(), ...RATE_LIMITED },
    handler: async ({ res }) => ({ status: 200, body: { data: await events.webhooks(requireCredential(res).treasuryId) } }),
  });

  kit.route<unknown, unknown, { id: string }>({
    method: "delete",
    path: "/api/v1/webhooks/:id",
    operationId: "deleteWebhook",
    summary: "Delete a webhook endpoint (extension)",
    description: "Nothing more is delivered to it, what it had not received included.",
    tags: ["Events"],
    security: "bearer",
    extension: true,
    request: { params: WebhookIdParams },
    responses: {
      204: { description: "deleted" },
      400: err("not a webhook id"),
      ...bearerRefusals(),
      404: err("no endpoint of this treasury has this id"),
      ...RATE_LIMITED,
    },
    errors: ["not_found"],
    handler: async ({ res, params }) => {
      await events.deleteWebhook(requireCredential(res).treasuryId, params.id);
      return { status: 204, body: undefined };
    },
  });

  kit.route<unknown, unknown, { id: string }>({
    method: "post",
    path: "/api/v1/webhooks/:id/enable",
    operationId: "enableWebhook",
    summary: "Enable a disabled webhook endpoint again (extension)",
    description: "The deliveries it missed while disabled are sent, in order, from the one it failed on.",
    tags: ["Events"],
    security: "bearer",
    extension: true,
    request: { params: WebhookIdParams },
    responses: {
      200: { description: "the endpoint", schema: Webhook },
      400: err("not a webhook id"),
      ...bearerRefusals(),
      404: err("no endpoint of this treasury has this id"),
      ...RATE_LIMITED,
    },
    errors: ["not_found"],
    handler: async ({ res, params }) => ({ status: 200, body: await events.enableWebhook(requireCredential(res).treasuryId, params.id) }),
  });

  kit.route<unknown, unknown, { id: string }>({
    method: "post",
    path: "/api/v1/webhooks/:id/test",
    operationId: "testWebhook",
    summary: "Send a test event to one webhook endpoint (extension)",
    description: "A `webhook.test` event is written to the treasury's log and delivered to this endpoint only, as any event is.",
    tags: ["Events"],
    security: "bearer",
    extension: true,
    request: { params: WebhookIdParams },
    responses: {
      202: { description: "the test event, queued for delivery", schema: EventList.shape.data.element },
      400: err("not a webhook id"),
      ...bearerRefusals(),
      404: err("no endpoint of this treasury has this id"),
      ...RATE_LIMITED,
    },
    errors: ["not_found"],
    handler: async ({ res, params }) => ({ status: 202, body: await events.testWebhook(requireCredential(res).treasuryId, params.id) }),
  });
}
