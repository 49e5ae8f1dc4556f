/**
 * Webhook delivery across processes on one store (SQLite file, or PostgreSQL in the postgres project): three
 * gateway processes share the deliveries (each event reaches the endpoint once per attempt, in order), and a
 * gateway killed with SIGKILL while a delivery is in flight loses nothing: its claim's lease runs out, another
 * process delivers again, and the receiver sees the same event id twice at most (a duplicate it deduplicates).
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import { gatewayProcess, type GatewayProcess } from "../helpers/gateway-process";
import { freshDatabase } from "../helpers/store";
import { authed, sandboxTenant } from "../helpers/treasury";

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
});

/** webhook timeout 1 s: a claim's lease is 2 × 1 s + 5 s */
const ENV = { WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1", EVENTS_POLL_MS: "100", WEBHOOK_TIMEOUT_MS: "1000" };

async function receiver() {
  const requests: { id: string; sequence: number; verified: boolean }[] = [];
  let secret = "";
  /** while set, a request is held unanswered (the gateway that sent it is killed meanwhile) */
  let hold = false;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      let verified = true;
      try {
        new Webhook(secret).verify(body, req.headers as Record<string, string>);
      } catch {
        verified = false;
      }
      const wasHeld = hold;
      requests.push({ id: String(req.headers["webhook-id"]), sequence: (JSON.parse(body) as { sequence: number }).sequence, verified });
      if (wasHeld) {
        held.push(res);
        return;
      }
      res.statusCode = 200;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests,
    setSecret: (s: string) => (secret = s),
    setHold: (h: boolean) => (hold = h),
    close: () => {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const until = async (what: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
};

let location: DatabaseLocation;
beforeAll(async () => {
  location = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "webhook-delivery-")));
}, 60_000);

describe("webhook delivery across gateway processes", () => {
  it("three instances deliver each event once per attempt, in order; a SIGKILL mid-delivery loses nothing", async () => {
    const gateways: GatewayProcess[] = [];
    for (let i = 0; i < 3; i++) gateways.push(await gatewayProcess(location, ENV, children));
    const hook = await receiver();
    try {
      const t = await sandboxTenant(gateways[0]!.url);
      const api = authed(gateways[0]!.url, t.key);
      const created = await api.post("/api/v1/webhooks", { url: hook.url }, null);
      expect(created.status, created.text).toBe(201);
      hook.setSecret(created.body.secret);

      // 20 events, written through all three instances
      for (let i = 0; i < 20; i++) {
        const r = await authed(gateways[i % 3]!.url, t.key).post(`/api/v1/webhooks/${created.body.id}/test`, {}, null);
        expect(r.status, r.text).toBe(202);
      }
      await until(() => hook.requests.length >= 20, 20_000);
      await new Promise((r) => setTimeout(r, 500));
      expect(hook.requests).toHaveLength(20); // once each: no two instances sent one event
      expect(hook.requests.map((r) => r.sequence)).toEqual([...Array(20).keys()].map((i) => i + 1));
      expect(new Set(hook.requests.map((r) => r.id)).size).toBe(20);
      expect(hook.requests.every((r) => r.verified)).toBe(true);

      // one instance left; the receiver holds the next delivery unanswered, and the instance is killed mid-request
      for (const g of gateways.slice(1)) g.child.kill("SIGKILL");
      hook.setHold(true);
      const alone = authed(gateways[0]!.url, t.key);
      for (let i = 0; i < 3; i++) await alone.post(`/api/v1/webhooks/${created.body.id}/test`, {}, null);
      await until(() => hook.requests.length === 21, 10_000);
      const inFlight = hook.requests[20]!;
      expect(inFlight.sequence).toBe(21);
      gateways[0]!.child.kill("SIGKILL");
      hook.setHold(false);

      // a new process on the same store: the dead claim's lease runs out, the event is delivered again, then the rest
      await gatewayProcess(location, ENV, children);
      await until(() => hook.requests.filter((r) => r.sequence === 23).length === 1, 30_000);
      const after = hook.requests.slice(21);
      expect(after.map((r) => r.sequence)).toEqual([21, 22, 23]);
      expect(after[0]!.id).toBe(inFlight.id); // the same event again: a duplicate only by its id
      const ids = hook.requests.map((r) => r.id);
      expect(new Set(ids).size).toBe(23); // every event delivered
      expect(ids.length - new Set(ids).size).toBe(1); // and one duplicate, the delivery cut off by the kill
    } finally {
      await hook.close();
    }
  }, 90_000);
});
