/**
 * The treasury's events, end to end on a real gateway (SQLite, real HTTP): produced by the real actions in
 * the same transaction, read as a page and as Server-Sent Events (the `eventsource` client, resumed with
 * Last-Event-ID), and delivered to webhook receivers on 127.0.0.1 that verify each signature with the
 * `standardwebhooks` package: in order, again after a receiver was down, an endpoint disabled once every
 * attempt failed and enabled again; and the URLs the service refuses to call.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { EventSource } from "eventsource";
import { Webhook } from "standardwebhooks";
import { keccak256, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../gateway/src/lib/clock";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, registerTreasury } from "../helpers/treasury";

let gw: TestGateway;
let v: ResponseValidator;

beforeAll(async () => {
  // retries after 1 s (a short schedule of 3 attempts), the stream's and the worker's poll at 100 ms
  gw = await startTestGateway({ WEBHOOK_RETRY_SCHEDULE: "1,1", EVENTS_POLL_MS: "100", WEBHOOK_TIMEOUT_MS: "2000" });
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
});
afterAll(() => gw.close());

interface Step {
  tx_id: string;
  seq: number;
  unsigned_transaction: { chain_id: number; to: Hex; data: Hex; value: string };
}

/** each wallet's next nonce: a second deposit's transactions are new ones */
const nonces = new Map<string, number>();
const sign = (account: PrivateKeyAccount, step: Step) => {
  const nonce = nonces.get(account.address) ?? 0;
  nonces.set(account.address, nonce + 1);
  return signAt(account, step, nonce);
};
const signAt = (account: PrivateKeyAccount, step: Step, nonce: number) =>
  account.signTransaction({
    type: "eip1559",
    chainId: step.unsigned_transaction.chain_id,
    nonce,
    to: step.unsigned_transaction.to,
    data: step.unsigned_transaction.data,
    value: BigInt(step.unsigned_transaction.value),
    gas: 300_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  });

/** a wallet-mode treasury on the simulated ledger, with collateral and USDC to deposit */
async function walletTreasury() {
  const account = privateKeyToAccount(generatePrivateKey());
  const t = await registerTreasury(gw.url, { wallet_address: account.address, chain: "base" });
  await gw.ctx.stores.treasuries.updateHoldings(
    t.treasuryId,
    { btcUnits: 50_000_000n, ethUnits: 10n ** 19n, usdcMicro: 5_000_000_000n, debtMicro: 1_000_000_000n },
    new Date().toISOString(),
  );
  return { account, t, api: authed(gw.url, t.key) };
}

/** prepare a deposit and relay its steps: envelope.created, then relay.confirmed per step */
async function deposit(w: Awaited<ReturnType<typeof walletTreasury>>, amount = 100) {
  const env = (await w.api.post("/api/v1/deposits", { amount_usdc: amount })).body;
  for (const step of env.steps as Step[]) {
    const r = await call(gw.url, "POST", "/api/v1/relay", {
      body: { tx_id: step.tx_id, signed_transaction: await sign(w.account, step) },
      headers: { "idempotency-key": `idem-${step.tx_id}` },
    });
    expect(r.status, r.text).toBe(200);
  }
  return env;
}

/** a webhook receiver on 127.0.0.1: verifies every delivery with the endpoint's secret; `answer` decides the status */
async function receiver(answer: (n: number) => number = () => 200) {
  const got: { id: string; verified: boolean; body: any }[] = [];
  let secret = "";
  let n = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      let verified = false;
      try {
        new Webhook(secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      const status = answer(n++);
      if (status >= 200 && status < 300) got.push({ id: String(req.headers["webhook-id"]), verified, body: JSON.parse(body) });
      res.statusCode = status;
      if (status >= 300 && status < 400) res.setHeader("location", (answer as unknown as { location?: string }).location ?? "/");
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    got,
    attempts: () => n,
    setSecret: (s: string) => (secret = s),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const until = async (what: () => boolean | Promise<boolean>, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("the event log", () => {
  it("records an envelope's creation and each relayed step, in order, numbered without gaps, in the API's shapes", async () => {
    const w = await walletTreasury();
    const env = await deposit(w);
    const page = await w.api.get("/api/v1/events");
    expect(page.status, page.text).toBe(200);
    v.check("GET", "/api/v1/events", 200, page.body);
    const events = page.body.data as any[];
    expect(events.map((e) => e.type)).toEqual(["envelope.created", "relay.confirmed", "relay.confirmed", "relay.confirmed"]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    expect(events[0]).toMatchObject({ treasury_id: w.t.treasuryId, data: { envelope_id: env.tx_id, action: "deposit", steps: 3 } });
    expect(events[3].data.execution_id).toMatch(/^[a-z]+_[0-9a-f]{32}$/);
    expect(events[1].data.execution_id).toBeNull();
    // paged with ?after=
    const second = await w.api.get("/api/v1/events?after=2&limit=1");
    expect(second.body).toMatchObject({ treasury_id: w.t.treasuryId, data: [{ sequence: 3 }], last_sequence: 4, next_after: 3, has_more: true });
    // another treasury's key reads its own (empty) log
    const other = await walletTreasury();
    expect((await other.api.get("/api/v1/events")).body).toEqual({
      treasury_id: other.t.treasuryId,
      data: [],
      last_sequence: 0,
      next_after: 0,
      has_more: false,
    });
  });

  it("writes no event for a change that rolled back", async () => {
    const w = await walletTreasury();
    await expect(
      gw.ctx.db.transaction(async () => {
        await gw.ctx.stores.events.append(w.t.treasuryId, "webhook.test", { webhook_id: "whk_rolled_back" });
        throw new Error("the change fails after its event was written");
      }),
    ).rejects.toThrow("the change fails");
    expect((await w.api.get("/api/v1/events")).body.data).toEqual([]);
    expect(await gw.ctx.stores.events.lastSequence(w.t.treasuryId)).toBe(0);
  });
});

describe("Server-Sent Events", () => {
  it("streams the log, then each event as it commits, and resumes after a disconnect from Last-Event-ID", async () => {
    const w = await walletTreasury();
    await deposit(w); // events 1..4
    const open = (lastEventId?: string) => {
      const seen: { id: string; type: string; data: any }[] = [];
      const es = new EventSource(`${gw.url}/api/v1/events`, {
        fetch: (input, init) =>
          fetch(input, {
            ...init,
            headers: {
              ...(init?.headers as Record<string, string>),
              authorization: `Bearer ${w.t.key}`,
              ...(lastEventId ? { "last-event-id": lastEventId } : {}),
            },
          }),
      });
      for (const type of ["envelope.created", "relay.confirmed"])
        es.addEventListener(type, (m) => seen.push({ id: m.lastEventId, type, data: JSON.parse(m.data) }));
      return { es, seen };
    };
    const first = open();
    await until(() => first.seen.length === 4);
    expect(first.seen.map((s) => s.id)).toEqual(["1", "2", "3", "4"]);
    // live: the next deposit's events arrive as they commit
    await deposit(w);
    await until(() => first.seen.length === 8);
    first.es.close();
    // disconnected: two more deposits happen; the client resumes from the last id it saw
    await deposit(w);
    const resumed = open(first.seen.at(-1)!.id);
    await until(() => resumed.seen.length === 4);
    expect(resumed.seen.map((s) => Number(s.id))).toEqual([9, 10, 11, 12]);
    expect(resumed.seen[0]!.data).toMatchObject({ type: "envelope.created", sequence: 9, treasury_id: w.t.treasuryId });
    resumed.es.close();
  });

  it("is refused without a credential, as any read (402 with the price)", async () => {
    const r = await call(gw.url, "GET", "/api/v1/events", { headers: { accept: "text/event-stream" } });
    expect(r.status).toBe(402);
  });
});

describe("webhooks", () => {
  it("registers an endpoint with its secret shown once, delivers signed events in order, and a test event to it alone", async () => {
    const w = await walletTreasury();
    const hook = await receiver();
    const other = await receiver();
    try {
      const created = await w.api.post("/api/v1/webhooks", { url: hook.url }, null);
      expect(created.status, created.text).toBe(201);
      v.check("POST", "/api/v1/webhooks", 201, created.body);
      expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
      hook.setSecret(created.body.secret);
      const second = await w.api.post("/api/v1/webhooks", { url: other.url, types: ["relay.confirmed"] }, null);
      other.setSecret(second.body.secret);
      const list = await w.api.get("/api/v1/webhooks");
      v.check("GET", "/api/v1/webhooks", 200, list.body);
      expect(list.body.data).toHaveLength(2);
      expect(JSON.stringify(list.body)).not.toContain("whsec_");

      await deposit(w);
      await until(() => hook.got.length === 4 && other.got.length === 3);
      expect(hook.got.every((g) => g.verified)).toBe(true);
      expect(hook.got.map((g) => g.body.sequence)).toEqual([1, 2, 3, 4]);
      expect(hook.got.map((g) => g.id)).toEqual(hook.got.map((g) => g.body.id));
      expect(other.got.map((g) => g.body.type)).toEqual(["relay.confirmed", "relay.confirmed", "relay.confirmed"]);

      const test = await w.api.post(`/api/v1/webhooks/${created.body.id}/test`, {}, null);
      expect(test.status, test.text).toBe(202);
      await until(() => hook.got.length === 5);
      expect(hook.got[4]!.body).toMatchObject({ type: "webhook.test", data: { webhook_id: created.body.id } });
      await new Promise((r) => setTimeout(r, 300));
      expect(other.got).toHaveLength(3); // the test event went to its endpoint only

      const del = await call(gw.url, "DELETE", `/api/v1/webhooks/${second.body.id}`, { headers: { authorization: `Bearer ${w.t.key}` } });
      expect(del.status).toBe(204);
      expect((await w.api.get("/api/v1/webhooks")).body.data.map((e: any) => e.id)).toEqual([created.body.id]);
      const again = await call(gw.url, "DELETE", `/api/v1/webhooks/${second.body.id}`, { headers: { authorization: `Bearer ${w.t.key}` } });
      expect(again.status).toBe(404);
      // another treasury cannot see, test or delete it
      const stranger = await walletTreasury();
      expect((await stranger.api.post(`/api/v1/webhooks/${created.body.id}/test`, {}, null)).status).toBe(404);
    } finally {
      await hook.close();
      await other.close();
    }
  });

  it("a receiver that is down gets everything, in order, once it recovers; duplicates only as ids", async () => {
    const w = await walletTreasury();
    let down = true;
    const hook = await receiver(() => (down ? 503 : 200));
    try {
      const created = await w.api.post("/api/v1/webhooks", { url: hook.url }, null);
      hook.setSecret(created.body.secret);
      await deposit(w); // 4 events while the receiver answers 503
      await until(() => hook.attempts() >= 2); // the first event tried, and tried again
      expect(hook.got).toHaveLength(0);
      down = false;
      await until(() => hook.got.length === 4);
      expect(hook.got.map((g) => g.body.sequence)).toEqual([1, 2, 3, 4]);
      expect(hook.got.every((g) => g.verified)).toBe(true);
      const rows = await gw.ctx.stores.webhooks.deliveries(created.body.id);
      expect(rows.map((r) => r.status)).toEqual(["delivered", "delivered", "delivered", "delivered"]);
      expect(rows[0]!.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      await hook.close();
    }
  });

  it("disables an endpoint that failed every attempt of an event, says why, and delivers what it missed once enabled again", async () => {
    const w = await walletTreasury();
    let down = true;
    const hook = await receiver(() => (down ? 500 : 200));
    try {
      const created = await w.api.post("/api/v1/webhooks", { url: hook.url }, null);
      hook.setSecret(created.body.secret);
      await w.api.post(`/api/v1/webhooks/${created.body.id}/test`, {}, null);
      // 3 attempts (the schedule "1,1"), then disabled
      await until(async () => (await w.api.get("/api/v1/webhooks")).body.data[0].status === "disabled", 15_000);
      const listed = (await w.api.get("/api/v1/webhooks")).body.data[0];
      expect(hook.attempts()).toBe(3);
      expect(listed.disabled_reason).toContain("HTTP 500");
      // nothing new is sent to a disabled endpoint
      await deposit(w);
      await new Promise((r) => setTimeout(r, 300));
      expect(hook.attempts()).toBe(3);
      down = false;
      const enabled = await w.api.post(`/api/v1/webhooks/${created.body.id}/enable`, {}, null);
      expect(enabled.body.status).toBe("enabled");
      await until(() => hook.got.length === 1);
      expect(hook.got[0]!.body.type).toBe("webhook.test");
    } finally {
      await hook.close();
    }
  });

  it("does not follow a redirect: the delivery fails and the redirect's target is never called", async () => {
    const w = await walletTreasury();
    const target = await receiver();
    const redirecting = await receiver(() => 302);
    (redirecting as unknown as { location: string }).location = target.url;
    try {
      const created = await w.api.post("/api/v1/webhooks", { url: redirecting.url }, null);
      await w.api.post(`/api/v1/webhooks/${created.body.id}/test`, {}, null);
      await until(async () => (await gw.ctx.stores.webhooks.deliveries(created.body.id))[0]?.lastError !== null);
      const [row] = await gw.ctx.stores.webhooks.deliveries(created.body.id);
      expect(row!.lastError).toContain("redirects are not followed");
      expect(target.attempts()).toBe(0);
    } finally {
      await target.close();
      await redirecting.close();
    }
  });

  it("refuses URLs that would make the service reach a private, link-local or non-https target", async () => {
    const w = await walletTreasury();
    for (const url of [
      "http://example.com/hook", // plain http outside loopback
      "https://10.0.0.8/hook", // private
      "https://192.168.1.1/hook",
      "https://169.254.169.254/latest/meta-data", // link-local: cloud metadata
      "https://[fe80::1]/hook",
      "https://[::ffff:10.0.0.1]/hook", // IPv4-mapped private
      "https://100.64.0.1/hook", // carrier-grade NAT
      "https://0.0.0.0/hook",
      "ftp://example.com/hook",
      "https://user:pass@example.com/hook",
      "not a url",
    ]) {
      const r = await w.api.post("/api/v1/webhooks", { url }, null);
      expect(r.status, url).toBe(400);
      expect(r.body.error, url).toBe("webhook_url_refused");
      v.check("POST", "/api/v1/webhooks", 400, r.body);
    }
    expect((await w.api.get("/api/v1/webhooks")).body.data).toEqual([]);
  });
});

describe("an envelope's deadlines", () => {
  it("envelope.expiring two minutes before an unsigned envelope expires, envelope.expired after, each once, on the deadline watch", async () => {
    const clock = new ManualClock(new Date());
    const timed = await startTestGateway({}, { clock });
    try {
      const account = privateKeyToAccount(generatePrivateKey());
      const t = await registerTreasury(timed.url, { wallet_address: account.address, chain: "base" });
      await timed.ctx.stores.treasuries.updateHoldings(
        t.treasuryId,
        { btcUnits: 50_000_000n, ethUnits: 10n ** 19n, usdcMicro: 5_000_000_000n, debtMicro: 0n },
        clock.now().toISOString(),
      );
      const env = (await authed(timed.url, t.key).post("/api/v1/deposits", { amount_usdc: 100 })).body;
      const sweep = () => timed.gateway.services.actions.envelopes.sweepDeadlines();
      const types = async () => (await timed.ctx.stores.events.after(t.treasuryId, 0, 50)).map((e) => e.type);
      expect(await sweep()).toBe(0); // 15 minutes left: nothing to say
      clock.advance(12 * 60_000 + 30_000); // 2.5 minutes left
      expect(await sweep()).toBe(0);
      clock.advance(60_000); // 1.5 minutes left
      expect(await sweep()).toBe(1);
      expect(await sweep()).toBe(0); // once
      clock.advance(2 * 60_000); // past its expiry, no relay came
      expect(await sweep()).toBe(1);
      expect(await sweep()).toBe(0);
      const log = await timed.ctx.stores.events.after(t.treasuryId, 0, 50);
      expect(await types()).toEqual(["envelope.created", "envelope.expiring", "envelope.expired"]);
      expect(log[1]!.data).toEqual({ envelope_id: env.tx_id, action: "deposit", expires_at: log[0]!.data.expires_at });
      expect(log[2]!.data).toEqual({ envelope_id: env.tx_id, action: "deposit", expired_at: log[0]!.data.expires_at });
      // a relay of it now is refused as expired, and tells nothing twice
      const step = env.steps[0] as Step;
      const late = await call(timed.url, "POST", "/api/v1/relay", {
        body: { tx_id: step.tx_id, signed_transaction: await signAt(account, step, 0) },
        headers: { "idempotency-key": `idem-late-${step.tx_id}` },
      });
      expect(late.body.error).toBe("envelope_expired");
      expect(await types()).toEqual(["envelope.created", "envelope.expiring", "envelope.expired"]);
    } finally {
      await timed.close();
    }
  });
});

describe("the list of types, declared once", () => {
  it("docs/API.md's table and /openapi.json's webhooks name every type of the core's list, and nothing else", async () => {
    const { EVENT_TYPE_NAMES } = await import("@treasury/core/schemas/events");
    const doc = (await call(gw.url, "GET", "/openapi.json")).body;
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPE_NAMES].sort());
    const api = fs.readFileSync(path.join(__dirname, "../../docs/API.md"), "utf8");
    const section = api.slice(api.indexOf("## Events"), api.indexOf("## MCP"));
    const rows = [...section.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(rows.sort()).toEqual([...EVENT_TYPE_NAMES].sort());
  });
});

describe("signatures", () => {
  it("a delivery's signature is Standard Webhooks': verified with the secret, refused with another or a changed body", async () => {
    const { signedDelivery } = await import("../../gateway/src/events/webhook-sender");
    const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    const event = {
      id: "evt_0123456789abcdef0123456789abcdef",
      type: "webhook.test" as const,
      treasury_id: "trs_x",
      sequence: 1,
      created_at: new Date().toISOString(),
      data: { webhook_id: "whk_x" },
    };
    const { headers, body } = signedDelivery(event, secret, new Date());
    expect(new Webhook(secret).verify(body, headers)).toEqual(event);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 8).toString("base64")}`).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('"sequence":1', '"sequence":2'), headers)).toThrow();
    expect(keccak256("0x00")).toBeTruthy();
  });
});
