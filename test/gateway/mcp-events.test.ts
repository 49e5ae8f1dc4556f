/**
 * The treasury's events over MCP, with the official clients: its state and its event log as resources (read
 * with the bearer key, another treasury's refused), and on 2026-07-28 a `subscriptions/listen` stream that is
 * told `notifications/resources/updated` when the log grows, whether the event was written by this gateway or
 * by another instance on the same store. The 2025-11-25 client reads the resources; this stateless server
 * offers it no subscription.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { sandboxTenant } from "../helpers/treasury";

let gw: TestGateway;
let other: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ EVENTS_POLL_MS: "100" });
  // a second instance on the same store: its events reach the first one's subscribers through the poll
  other = await startTestGateway({ EVENTS_POLL_MS: "100" }, { dataDir: gw.dataDir, database: gw.database });
});
afterAll(async () => {
  await other?.close();
  await gw?.close();
});

async function modern(key: string) {
  const client = new ModernClient({ name: "events-agent", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new ModernTransport(new URL(`${gw.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

const until = async (what: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe("treasury resources and subscriptions over MCP", () => {
  it("2026-07-28: lists and reads the key's own resources, and a listen stream is told when the log grows, on any instance", async () => {
    const t = await sandboxTenant(gw.url);
    const client = await modern(t.key);
    try {
      const events = `treasury://${t.treasuryId}/events`;
      const state = `treasury://${t.treasuryId}/state`;
      expect(client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
      const listed = await client.listResources();
      expect(listed.resources.map((r) => r.uri).sort()).toEqual([events, state]);
      const read = await client.readResource({ uri: state });
      expect(JSON.parse(String((read.contents[0] as { text: string }).text))).toMatchObject({ treasury_id: t.treasuryId });

      const updated: string[] = [];
      client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
      const subscription = await client.listen({ resourceSubscriptions: [events] });
      expect(subscription.honoredFilter.resourceSubscriptions).toEqual([events]);

      // an event written by this instance: told at once
      await gw.ctx.stores.events.append(t.treasuryId, "webhook.test", { webhook_id: "whk_from_this_instance" });
      await until(() => updated.length >= 1);
      expect(updated[0]).toBe(events);
      // one written by the other instance: told within its poll
      const before = updated.length;
      await other.ctx.stores.events.append(t.treasuryId, "webhook.test", { webhook_id: "whk_from_another_instance" });
      await until(() => updated.length > before, 5_000);
      const log = JSON.parse(String(((await client.readResource({ uri: events })).contents[0] as { text: string }).text));
      expect(log.data.map((e: { data: { webhook_id: string } }) => e.data.webhook_id)).toEqual(["whk_from_this_instance", "whk_from_another_instance"]);
      // another treasury's event tells this subscriber nothing (a notice names only the URI subscribed to; the
      // poll's overlapping window may repeat one, which is harmless)
      const stranger = await sandboxTenant(gw.url);
      await gw.ctx.stores.events.append(stranger.treasuryId, "webhook.test", { webhook_id: "whk_elsewhere" });
      await new Promise((r) => setTimeout(r, 300));
      expect(new Set(updated)).toEqual(new Set([events]));
      await subscription.close();
    } finally {
      await client.close();
    }
  });

  it("refuses another treasury's resource: read and subscription alike", async () => {
    const mine = await sandboxTenant(gw.url);
    const theirs = await sandboxTenant(gw.url);
    const client = await modern(mine.key);
    try {
      await expect(client.readResource({ uri: `treasury://${theirs.treasuryId}/events` })).rejects.toThrow(/not this key's treasury/);
      await expect(client.listen({ resourceSubscriptions: [`treasury://${theirs.treasuryId}/events`] })).rejects.toThrow(
        /not a resource of this key's treasury/,
      );
    } finally {
      await client.close();
    }
  });

  it("2025-11-25: the 1.x client lists and reads the resources; no subscription is offered by this stateless server", async () => {
    const t = await sandboxTenant(gw.url);
    await gw.ctx.stores.events.append(t.treasuryId, "webhook.test", { webhook_id: "whk_legacy" });
    const client = new LegacyClient({ name: "legacy-agent", version: "1.0.0" });
    await client.connect(new LegacyTransport(new URL(`${gw.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } } }));
    try {
      expect(client.getServerCapabilities()?.resources).toMatchObject({ subscribe: false });
      const uri = `treasury://${t.treasuryId}/events`;
      expect((await client.listResources()).resources.map((r) => r.uri)).toContain(uri);
      const log = JSON.parse(String(((await client.readResource({ uri })).contents[0] as { text: string }).text));
      expect(log.data).toMatchObject([{ type: "webhook.test", data: { webhook_id: "whk_legacy" } }]);
    } finally {
      await client.close();
    }
  });
});
