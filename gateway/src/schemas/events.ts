/** The event log's and the webhooks' requests and answers (routes/events.ts); the events themselves: @treasury/core/schemas/events. */
import { queryNumber } from "@treasury/core/schemas/common";
import { EVENT_TYPE_NAMES, TreasuryEvent } from "@treasury/core/schemas/events";
import { z } from "@treasury/core/schemas/zod";

export const EVENT_PAGE = { default: 100, max: 500 } as const;

export const EventsQuery = z.object({
  after: queryNumber()
    .pipe(z.number().int().min(0))
    .optional()
    .openapi({
      param: { name: "after", in: "query" },
      type: "integer",
      minimum: 0,
      default: 0,
      description: "the events after this sequence number (the last one read: `next_after` of the page before); on the stream, Last-Event-ID wins over it",
    }),
  limit: queryNumber()
    .pipe(z.number().int().min(1).max(EVENT_PAGE.max))
    .optional()
    .openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: EVENT_PAGE.max,
      default: EVENT_PAGE.default,
      description: "events per page",
    }),
});

export const EventList = z
  .object({
    treasury_id: z.string().openapi({ description: "the treasury whose log this is" }),
    data: z.array(TreasuryEvent),
    last_sequence: z.number().int().openapi({ description: "the log's last sequence number now (0: no event yet)" }),
    next_after: z.number().int().openapi({ description: "the `after` of the next page (the last sequence number of this one)" }),
    has_more: z.boolean(),
  })
  .openapi("EventList");

export const WebhookCreate = z
  .object({
    url: z.string().max(2048).openapi({
      description:
        "https URL the events are POSTed to (http to a loopback address on a local stack); private, link-local and loopback addresses are refused, redirects are not followed",
      example: "https://agent.example/hooks/treasury",
    }),
    types: z
      .array(z.enum(EVENT_TYPE_NAMES))
      .max(EVENT_TYPE_NAMES.length)
      .optional()
      .openapi({ description: "the event types it receives (default: every type)" }),
  })
  .strict();

export const Webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    types: z.array(z.enum(EVENT_TYPE_NAMES)).nullable().openapi({ description: "null: every type" }),
    status: z.enum(["enabled", "disabled"]),
    disabled_reason: z
      .string()
      .nullable()
      .openapi({ description: "why deliveries stopped: the endpoint failed every attempt of an event's retry schedule (enable it again to resume, in order)" }),
    created_at: z.string(),
  })
  .openapi("Webhook");

export const WebhookCreated = Webhook.extend({
  secret: z.string().openapi({
    description:
      "the signing secret (whsec_ and base64), shown once: verify each delivery's webhook-signature with it (Standard Webhooks: HMAC-SHA256 of `webhook-id.webhook-timestamp.body`)",
  }),
}).openapi("WebhookCreated");

export const WebhookList = z.object({ data: z.array(Webhook) }).openapi("WebhookList");

export const WebhookIdParams = z.object({ id: z.string().regex(/^whk_[0-9a-f]{32}$/, "must be a webhook id (whk_ and 32 hex digits)") });
