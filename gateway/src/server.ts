/** Start and stop a gateway: database, app, HTTP server. Used by main.ts and the tests. */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { createApp, type GatewayApp } from "./app";
import { publishTreasuryChanged } from "./mcp/resources";
import type { AnyScheme } from "./x402/schemes/scheme";
import type { Config } from "./config";
import { systemClock, type Clock } from "./lib/clock";
import { createStores, linksFor, type AppContext } from "./services/context";
import { describeLocation, type DatabaseLocation } from "./store/db";
import { openDatabase } from "./store/open-database";
import { SecretBox } from "./lib/secrets";
import { startSweeper } from "./store/retention";
import { HEARTBEAT_MS } from "./store/instance-store";
import { INSTANCE_ID } from "./store/lease";
import { loadReceiptSigningKey } from "./x402/receipts/receipt-key";
import { WebhookDelivery } from "./events/webhook-delivery";

/** how often the envelope deadline watch looks (envelope.expiring is written 2 minutes ahead) */
const DEADLINE_SWEEP_MS = 5_000;

/**
 * Publish each treasury's new events onto the MCP bus; returns the stop. This process's own events at once;
 * another instance's are found by polling the last sequence of each treasury a listen stream here subscribes to.
 */
function mcpNotifications(gateway: GatewayApp, pollMs: number, warn: (err: unknown) => void): () => void {
  const bus = gateway.mcpBus;
  const unsubscribe = gateway.services.events.onAppended((id) => publishTreasuryChanged(bus, id));
  const seen = new Map<string, number>();
  const timer = setInterval(() => {
    const ids = gateway.mcpSubscribed.list();
    for (const id of seen.keys()) if (!ids.includes(id)) seen.delete(id);
    if (ids.length === 0) return;
    void gateway.services.events
      .lastSequences(ids)
      .then((last) => {
        for (const [id, sequence] of last) {
          const before = seen.get(id);
          seen.set(id, sequence);
          // first seen: told too (what another instance wrote between the listen and this poll is not missed; a
          // notice says "read again", so one too many is harmless)
          if (before === undefined || sequence > before) publishTreasuryChanged(bus, id);
        }
      })
      .catch(warn);
  }, pollMs);
  timer.unref();
  return () => {
    unsubscribe();
    clearInterval(timer);
  };
}

export interface RunningGateway {
  url: string;
  port: number;
  ctx: AppContext;
  gateway: GatewayApp;
  close(): Promise<void>;
}

/** the store of this configuration: DATABASE_URL's PostgreSQL, else DATA_DIR's SQLite file (or `database` given by a test) */
/** `schemes`: the x402 schemes taken (the registry unless a test gives its own) */
export async function startGateway(opts: {
  config: Config;
  logger: Logger;
  database?: DatabaseLocation;
  clock?: Clock;
  schemes?: readonly AnyScheme[];
}): Promise<RunningGateway> {
  const location = opts.database ?? opts.config.database;
  const db = await openDatabase(location);
  opts.logger.info({ store: describeLocation(location) }, "store open");
  const clock = opts.clock ?? systemClock;
  // links need the port, which is known once listening; a holder fills it in
  // sealed secrets: SECRETS_KEY, else DATA_DIR/secrets.key (instances sharing a PostgreSQL must share the key)
  const box = SecretBox.fromConfig(opts.config.secretsKey, opts.config.dataDir);
  // x402 offers and receipts: X402_RECEIPT_SIGNING_KEY, else DATA_DIR/x402-receipt-signing.key (instances sharing a database share it)
  const receiptKey = loadReceiptSigningKey({ configured: opts.config.x402.receiptSigningKey, dataDir: opts.config.dataDir });
  opts.logger.info({ kid: receiptKey.kid, source: receiptKey.source }, "x402 receipt signing key");
  const ctx: AppContext = {
    config: opts.config,
    db,
    tx: db,
    stores: createStores(db, box, { eventLog: opts.config.events.log }),
    clock,
    links: linksFor("http://placeholder"),
  };
  const server: Server = await new Promise((resolve, reject) => {
    const s = http.createServer().listen(opts.config.port, opts.config.host, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${opts.config.host}:${port}`;
  ctx.links = linksFor(opts.config.publicBaseUrl ?? url);
  const gateway = createApp(ctx, opts.logger, receiptKey, { schemes: opts.schemes });
  server.on("request", gateway.app);
  server.keepAliveTimeout = 5_000;
  const stopSweeper =
    opts.config.retentionSweepMs > 0
      ? startSweeper(ctx.stores, clock, opts.config.retentionSweepMs, (r) => {
          if (r instanceof Error) opts.logger.warn({ err: r }, "retention sweep failed");
          else if (r.idempotency + r.rate_limit_windows + r.payments > 0) opts.logger.info({ swept: r }, "expired records swept");
        })
      : async () => undefined;

  // this process's heartbeat in the store: its claims are taken over at once if it dies (store/instance-store.ts)
  await ctx.stores.instances.beat(INSTANCE_ID, clock.now());
  const heartbeat = setInterval(
    () => void ctx.stores.instances.beat(INSTANCE_ID, clock.now()).catch((err: unknown) => opts.logger.warn({ err }, "heartbeat failed")),
    HEARTBEAT_MS,
  );
  heartbeat.unref();
  // x402 sessions: charged vouchers redeemed on chain when the batch policy says so (x402/schemes/session/redeemer.ts)
  const redeemer = gateway.services.payments.redeemer;
  redeemer?.start(1_000, (err) => opts.logger.warn({ err }, "session redemption failed"));

  // webhooks: every instance delivers, each delivery claimed under a lease (events/webhook-delivery.ts)
  const webhooks = new WebhookDelivery(
    ctx.stores,
    clock,
    {
      holder: INSTANCE_ID,
      allowLoopback: opts.config.events.allowLoopbackWebhooks,
      timeoutMs: opts.config.events.webhookTimeoutMs,
      retryScheduleSeconds: opts.config.events.webhookRetrySeconds,
      pollMs: opts.config.events.pollMs,
      userAgent: "agent-treasury-gateway-webhooks/1",
    },
    (err) => opts.logger.warn({ err }, "webhook delivery pass failed"),
  );
  webhooks.start();
  // envelopes about to expire, or expired with no relay to refuse them: their events (services/envelopes/lifecycle.ts)
  const deadlines = setInterval(
    () => void gateway.services.actions.envelopes.sweepDeadlines().catch((err: unknown) => opts.logger.warn({ err }, "envelope deadline sweep failed")),
    DEADLINE_SWEEP_MS,
  );
  deadlines.unref();

  // MCP subscribers (subscriptions/listen): told when a treasury's log grows, by this process at once, by another
  // within a poll (only polled while a subscription is open)
  const stopMcpEvents = mcpNotifications(gateway, opts.config.events.pollMs, (err) => opts.logger.warn({ err }, "mcp event poll failed"));

  let closed = false;
  return {
    url,
    port,
    ctx,
    gateway,
    close: async () => {
      if (closed) return;
      closed = true;
      gateway.services.events.close(); // every event stream ends, so the server can close
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
      clearInterval(heartbeat);
      await redeemer?.stop();
      clearInterval(deadlines);
      stopMcpEvents();
      await webhooks.stop();
      await stopSweeper();
      await db.close();
    },
  };
}
