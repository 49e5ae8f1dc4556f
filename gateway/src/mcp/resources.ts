/**
 * The treasury as MCP resources, and their change notifications:
 *
 *   treasury://{treasury_id}/state    the treasury's state (GET /api/v1/treasury)
 *   treasury://{treasury_id}/events   its event log's last 100 events (GET /api/v1/events)
 *
 * Read with the HTTP request's bearer key, as the tools are (each read is served by its REST route,
 * rest-twin.ts): another treasury's URI is refused. On 2026-07-28 a client subscribes with
 * `subscriptions/listen` (`resourceSubscriptions`): `notifications/resources/updated` for a URI reaches it
 * whenever an event is written to that treasury's log, by this instance (at once) or another one (within
 * EVENTS_POLL_MS). A listen request is checked before the SDK serves it: every URI it names must be one of the
 * bearer key's own treasury. The 2025-11-25 revision has no per-request subscription: this stateless server
 * (no session, no standalone stream) cannot deliver its `resources/subscribe` notifications, so it answers
 * that revision's clients with the resources but without the subscribe capability.
 */
import { InMemoryServerEventBus, ResourceTemplate, type CallToolResult, type McpServer, type ServerEventBus } from "@modelcontextprotocol/server";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { TwinRoute } from "./tools";

/** what a resource read needs from the MCP request (server.ts ToolContext has it) */
interface ToolContext {
  bearer?: string;
  dispatch(route: TwinRoute, args: Record<string, unknown>): Promise<CallToolResult>;
}

export const RESOURCE_KINDS = ["state", "events"] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

export const resourceUri = (treasuryId: string, kind: ResourceKind) => `treasury://${treasuryId}/${kind}`;
const URI = /^treasury:\/\/([a-z]+_[0-9a-f]{32})\/(state|events)$/;
/** events a resource read of the log carries: its last ones */
const LAST_EVENTS = 100;

/** the process's change-event bus: every request's handler publishes onto it and every listen stream reads it */
export function eventBus(log: (err: unknown) => void): ServerEventBus & { listenerCount: number } {
  return new InMemoryServerEventBus((err) => log(err));
}

/**
 * The treasuries this process's open listen streams subscribe to (a count per treasury): the ones whose logs
 * are polled for what other instances wrote (server.ts).
 */
export class SubscribedTreasuries {
  private readonly counts = new Map<string, number>();

  add(ids: readonly string[]): () => void {
    for (const id of ids) this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      for (const id of ids) {
        const n = (this.counts.get(id) ?? 1) - 1;
        if (n <= 0) this.counts.delete(id);
        else this.counts.set(id, n);
      }
    };
  }

  list(): string[] {
    return [...this.counts.keys()];
  }
}

/** the treasuries a listen request's resource URIs name (each already checked to be the key's own) */
export function subscribedTreasuriesOf(message: unknown): string[] {
  const uris = (message as { params?: { notifications?: { resourceSubscriptions?: unknown } } } | null)?.params?.notifications?.resourceSubscriptions;
  if (!Array.isArray(uris)) return [];
  return [...new Set(uris.flatMap((u) => (typeof u === "string" ? (URI.exec(u)?.[1] ?? []) : [])))];
}

/** tell the bus that a treasury changed: both of its resources */
export function publishTreasuryChanged(bus: ServerEventBus, treasuryId: string): void {
  for (const kind of RESOURCE_KINDS) bus.publish({ kind: "resource_updated", uri: resourceUri(treasuryId, kind) });
}

/** the bearer key's treasury and its log's page, read through the REST route */
async function eventsPage(tc: ToolContext, args: Record<string, unknown>): Promise<{ treasury_id: string; last_sequence: number } & Record<string, unknown>> {
  const r = await tc.dispatch({ method: "GET", path: "/api/v1/events" }, args);
  const body = r.structuredContent as Record<string, unknown>;
  if (r.isError)
    throw new TreasuryError(
      body.error === "unauthorized" ? "unauthorized" : "invalid_request",
      String(body.message ?? "the treasury's events could not be read"),
    );
  return body as { treasury_id: string; last_sequence: number };
}

/** the treasury resources, registered on a request's server */
export function registerTreasuryResources(server: McpServer, tc: ToolContext): void {
  const own = async () => (tc.bearer ? (await eventsPage(tc, { limit: 1 })).treasury_id : undefined);
  const check = async (treasuryId: string) => {
    if (!tc.bearer) throw new TreasuryError("unauthorized", "reading a treasury resource needs Authorization: Bearer <key> on the HTTP request");
    if ((await own()) !== treasuryId) throw new TreasuryError("not_found", `treasury://${treasuryId} is not this key's treasury`);
  };
  const list = (kind: ResourceKind) => async () => {
    const id = await own().catch(() => undefined);
    return { resources: id ? [{ uri: resourceUri(id, kind), name: `${kind} of ${id}`, mimeType: "application/json" }] : [] };
  };
  server.registerResource(
    "treasury_state",
    new ResourceTemplate("treasury://{treasury_id}/state", { list: list("state") }),
    {
      title: "Treasury state",
      description: "The bearer key's treasury: holdings, value, debt, LTV, health (GET /api/v1/treasury).",
      mimeType: "application/json",
    },
    async (uri, vars) => {
      await check(String(vars.treasury_id));
      const r = await tc.dispatch({ method: "GET", path: "/api/v1/treasury" }, {});
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(r.structuredContent) }] };
    },
  );
  server.registerResource(
    "treasury_events",
    new ResourceTemplate("treasury://{treasury_id}/events", { list: list("events") }),
    {
      title: "Treasury events",
      description: `The last ${LAST_EVENTS} events of the bearer key's treasury, oldest first (GET /api/v1/events: every type is in /openapi.json's webhooks).`,
      mimeType: "application/json",
    },
    async (uri, vars) => {
      await check(String(vars.treasury_id));
      const { last_sequence } = await eventsPage(tc, { limit: 1 });
      const page = await eventsPage(tc, { after: Math.max(0, last_sequence - LAST_EVENTS), limit: LAST_EVENTS });
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(page) }] };
    },
  );
}

/**
 * A `subscriptions/listen` request's resource URIs, each checked against the bearer key's treasury: the
 * JSON-RPC error to answer with, or undefined when every one is the key's own (or none is named).
 */
export async function refusedSubscription(message: unknown, tc: ToolContext): Promise<{ code: number; message: string } | undefined> {
  const m = message as { method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } } | null;
  if (!m || typeof m !== "object" || m.method !== "subscriptions/listen") return undefined;
  const uris = m.params?.notifications?.resourceSubscriptions;
  if (uris === undefined) return undefined;
  if (!Array.isArray(uris) || uris.some((u) => typeof u !== "string")) return { code: -32602, message: "resourceSubscriptions: a list of resource URIs" };
  if (uris.length === 0) return undefined;
  if (!tc.bearer) return { code: -32602, message: "subscribing to a treasury resource needs Authorization: Bearer <key> on the HTTP request" };
  const own = (await eventsPage(tc, { limit: 1 }).catch(() => undefined))?.treasury_id;
  if (!own) return { code: -32602, message: "the bearer key was refused" };
  const foreign = (uris as string[]).find((u) => URI.exec(u)?.[1] !== own);
  return foreign === undefined
    ? undefined
    : { code: -32602, message: `${foreign} is not a resource of this key's treasury (treasury://${own}/state or /events)` };
}
