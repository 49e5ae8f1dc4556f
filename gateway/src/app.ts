/**
 * The Express application: middleware in order, every route module, the
 * OpenAPI document, 405/404 and the typed error handler.
 */
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import express, { type Express, type Request } from "express";
import type { Logger } from "pino";
import { jsonBody, keepRawBody } from "./http/content-type";
import { docsRouter } from "./http/docs-page";
import { consoleRouter } from "./console/serve";
import { errorHandler, notFoundHandler, sendError } from "./http/errors";
import { TreasuryError } from "@treasury/core/lib/errors";
import { buildOpenApiDocument } from "./http/openapi";
import { hostGuard } from "./http/host-guard";
import { credentialCreationLimit, rateLimits, UNPROVEN_PAYER } from "./http/rate-limit";
import { scrubLogObject } from "./http/log-scrub";
import { requestContext } from "./http/request-context";
import { withPlainQueryShortcut } from "./http/query-parser";
import { accessLog } from "./http/access-log";
import { RouteDispatcher, ROUTER_OPTIONS } from "./http/dispatcher";
import { RouteTable } from "./http/route";
import { adminGuard, adminRoutes } from "./routes/admin";
import { agentRoutes } from "./routes/agents";
import { discoveryRoutes } from "./routes/discovery";
import { createKit } from "./routes/kit";
import { publicRoutes } from "./routes/public";
import { treasuryRoutes } from "./routes/treasuries";
import { clientAddress, isInternalDispatch } from "./mcp/rest-twin";
import { toolsOf, type ToolDefinition } from "./mcp/tools";
import { actionRoutes } from "./routes/actions";
import { delegationRoutes } from "./routes/delegation";
import { receiptRoutes } from "./routes/receipts";
import { eventRoutes } from "./routes/events";
import { relayRoutes } from "./routes/relay";
import { treasuryReadRoutes } from "./routes/treasury-reads";
import { safeTransactionRoutes } from "./routes/safe-transactions";
import { consoleRoutes } from "./routes/console";
import { x402Routes } from "./routes/x402";
import { receiptKeyRoutes } from "./routes/receipt-keys";
import { paidAnswers } from "./x402/receipts/paid-answers";
import type { ReceiptSigningKey } from "./x402/receipts/receipt-key";
import { X402_ASSET } from "./x402/asset";
import { X402_NETWORK } from "./x402/payment-gate";
import type { AnyScheme } from "./x402/schemes/scheme";
import { sentPaymentOf } from "./http/sent-payment";
import { mcpRoutes } from "./routes/mcp";
import { eventBus, SubscribedTreasuries } from "./mcp/resources";
import type { ServerEventBus } from "@modelcontextprotocol/server";
import { hasWalletSignature } from "./services/wallet-signature";
import { createServices, type Services } from "./services/services";
import { aaveOfPool, gatewayStatusWriter, type ChainExecution } from "./services/gateway-status";
import { scope, type AppContext } from "./services/context";
import { credentialIdentity } from "./services/credentials";
import { TREASURY_CHAINS, type TreasuryChain } from "@treasury/core/contracts/chains";

export const SERVICE_VERSION = "0.1.0";

export interface GatewayApp {
  app: Express;
  /** the MCP change-event bus: a treasury's events are published onto it (server.ts), its subscribers are told */
  mcpBus: ServerEventBus & { listenerCount: number };
  /** the treasuries this process's MCP listen streams subscribe to */
  mcpSubscribed: SubscribedTreasuries;
  openapi: ReturnType<typeof buildOpenApiDocument>;
  services: Services;
}

/** `receiptKey`: the key that signs x402 offers and receipts (x402/receipts/receipt-key.ts, loaded once by server.ts) */
/** `opts.schemes`: the x402 schemes taken (the registry, x402/schemes/index.ts, unless a test gives its own) */
export function createApp(ctx: AppContext, baseLogger: Logger, receiptKey: ReceiptSigningKey, opts: { schemes?: readonly AnyScheme[] } = {}): GatewayApp {
  // every line the gateway writes passes the credential scrubber (http/log-scrub.ts)
  const secrets = [ctx.config.adminToken ?? ""].filter(Boolean);
  const logger = baseLogger.child({}, { formatters: { log: (o) => scrubLogObject(o, secrets) as Record<string, unknown> } });
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", ctx.config.trustProxy);
  app.set("etag", false);
  // one spelling per route (http/dispatcher.ts): the application's own router matches exactly, as every route module's does
  app.set("case sensitive routing", ROUTER_OPTIONS.caseSensitive);
  app.set("strict routing", ROUTER_OPTIONS.strict);
  // Express's own query parser, with a shortcut for plain name=value queries (http/query-parser.ts)
  app.set("query parser", withPlainQueryShortcut(app.get("query parser fn") as (query: string) => unknown));

  const services = createServices(ctx, opts);
  const startedAt = ctx.clock.now();
  const broadcast = async (chain: TreasuryChain): Promise<ChainExecution> => {
    const [sandbox, pool] = await Promise.all([services.actions.sandbox.active(chain), services.actions.chain.aavePool(chain)]);
    return {
      chain,
      execution: "broadcast",
      network: ctx.config.liveChains.includes(chain) ? "live" : sandbox ? "local_sandbox_chain" : "test_network",
      sandbox_funding: sandbox,
      aave: aaveOfPool(pool),
    };
  };
  const simulated = (chain: TreasuryChain): ChainExecution => ({ chain, execution: "simulated", network: "none", sandbox_funding: false, aave: null });
  const chains = (): Promise<ChainExecution[]> => {
    // no chain with an RPC (the sandbox's default): the rows at once, without a promise per chain
    if (!TREASURY_CHAINS.some((chain) => services.actions.chain.connected(chain))) return Promise.resolve(TREASURY_CHAINS.map(simulated));
    return Promise.all(TREASURY_CHAINS.map(async (chain) => (services.actions.chain.connected(chain) ? broadcast(chain) : simulated(chain))));
  };
  const status = gatewayStatusWriter({ clock: ctx.clock, ping: () => ctx.db.get("SELECT 1 AS one"), chains }, startedAt, SERVICE_VERSION);

  const keys = scope(ctx, "apiKeys");
  // the client's address; with no proxy trusted, Express's req.ip is the socket's address, read here without
  // proxy-addr's parse of X-Forwarded-For on every request
  const addressOf =
    ctx.config.trustProxy === false
      ? (req: Request) => (isInternalDispatch(req) ? clientAddress(req) : (req.socket.remoteAddress ?? "unknown"))
      : clientAddress;
  app.use(requestContext(accessLog(logger, secrets)));
  app.use("/api/mcp", hostGuard({ publicBaseUrl: ctx.links.base, ...ctx.config.mcp }));
  app.use(
    rateLimits({
      readPerWindow: ctx.config.rateLimit.readPerWindow,
      writePerWindow: ctx.config.rateLimit.writePerWindow,
      windowMs: ctx.config.rateLimit.windowMs,
      counters: ctx.stores.rateLimits,
      protocolPaths: ["/api/mcp"],
      internal: isInternalDispatch,
      addressOf,
      // only an identity that cost something picks a bucket: a valid API key, or a payer this service has been paid by, named by a proof valid now
      credentialOf: (req) => {
        if (req.headers.authorization) return credentialIdentity(keys, req);
        // a sign-in (it decides over a payment header beside it) is counted as a payer: its signer's own bucket once proven, else unproven
        if (hasWalletSignature(req)) return services.walletSignature.provenSigner(req).then((signer) => (signer === null ? UNPROVEN_PAYER : `payer:${signer}`));
        const sent = sentPaymentOf(req, services.payments); // read once: the request's stages read the same
        if (!sent) return undefined; // nothing to look up: counted by address at once
        return services.payments.provenPayer(sent, req).then((payer) => (payer === undefined ? undefined : payer === null ? UNPROVEN_PAYER : `payer:${payer}`));
      },
    }),
  );
  app.use(
    credentialCreationLimit({
      perHour: ctx.config.credentialsPerHour,
      paths: ["/api/v1/sandbox/keys", "/api/v1/treasuries"],
      counters: ctx.stores.rateLimits,
      addressOf,
    }),
  );
  app.use(
    jsonBody({
      limitBytes: ctx.config.bodyLimitBytes,
      fallback: express.json({ limit: ctx.config.bodyLimitBytes, strict: true, type: ["application/json", "application/*+json"], verify: keepRawBody }),
    }),
  );

  // x402's offer-receipt extension: signed offers on every 402, a signed receipt on every paid answer
  const receipts = paidAnswers({
    key: receiptKey,
    clock: ctx.clock,
    links: { url: (path) => ctx.links.url(path) },
    accepts: (route) => services.payments.paymentRequired(route).accepts,
    log: (err, message) => logger.error({ err }, message),
  });

  const registry = new OpenAPIRegistry();
  const table = new RouteTable();
  const api = new RouteDispatcher();
  const kit = createKit(api, registry, table, {
    authenticate: services.authenticate,
    payments: services.payments,
    receipts,
    walletSignature: services.walletSignature,
    prices: services.prices,
    catalog: services.catalog,
    idempotency: ctx.stores.idempotency,
    renewReservations: (holder) => ctx.stores.slots.renew(holder, ctx.clock.now()),
    transaction: (fn) => ctx.tx.transaction(fn),
    now: () => ctx.clock.now(),
  });

  discoveryRoutes(kit, scope(ctx), services.preview);
  publicRoutes(kit, {
    marketRates: services.marketRates,
    policy: services.policy,
    preview: services.preview,
    treasuries: services.treasuries,
    status,
  });
  treasuryRoutes(kit, scope(ctx), services.treasuries);
  agentRoutes(kit, services.access);
  actionRoutes(kit, services);
  treasuryReadRoutes(kit, services);
  delegationRoutes(kit, services);
  receiptRoutes(kit, services.treasuries);
  eventRoutes(kit, services.events);
  relayRoutes(kit, services.relay);
  safeTransactionRoutes(kit, services.safeTransactions);
  consoleRoutes(kit, services.consoleSessions, services.treasuries);
  x402Routes(kit, services.prices, services.catalog, services.payments, { network: X402_NETWORK, asset: X402_ASSET.address, payTo: ctx.config.x402.payTo });
  receiptKeyRoutes(kit, [receiptKey]);
  // the MCP tools: derived from the routes that declare one, once every route is registered
  let tools: ToolDefinition[] | undefined;
  const toolList = () => (tools ??= toolsOf(table.toolRoutes(), (method, path) => table.routeOf(method, path)));
  const mcpBus = eventBus((err) => logger.warn({ err }, "mcp subscription listener failed"));
  const mcpSubscribed = new SubscribedTreasuries();
  mcpRoutes(kit, scope(ctx), {
    bus: mcpBus,
    subscribed: mcpSubscribed,
    tools: toolList,
    payments: services.payments,
    walletSignature: services.walletSignature,
    receipts,
    version: SERVICE_VERSION,
    log: (err) => logger.error({ err }, "mcp tool failed"),
  });

  const admin = new RouteDispatcher();
  adminRoutes(createKit(admin, registry, table), services.access);

  toolList(); // a tool declaration error fails at start, not at the first call
  const openapi = buildOpenApiDocument(registry, ctx.links.base);
  // the API first (its paths are found in one lookup), then the pages and the admin API, whose paths it never shares
  app.use(api.handle);
  app.get("/openapi.json", (_req, res) => {
    res.json(openapi);
  });
  table.add("/openapi.json", "get");
  table.add("/docs", "get");
  app.use(docsRouter());
  app.use(consoleRouter());

  // the guard answers every /admin path first: 404 when the admin API is off, 401 without the token
  app.use("/admin", adminGuard(scope(ctx)));
  app.use(admin.handle);

  // a known path with a method it does not serve: 405 with Allow
  for (const [path, methods] of table.entries()) {
    app.all(path, (req, res) => {
      res.setHeader("Allow", methods.join(", "));
      sendError(res, new TreasuryError("method_not_allowed", `${req.method} is not supported on ${req.path}; allowed: ${methods.join(", ")}`));
    });
  }
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return { app, openapi, services, mcpBus, mcpSubscribed };
}
