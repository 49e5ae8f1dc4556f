/**
 * The protection engine and the executor of operators' signed Safe
 * transactions, as their own process (it holds the automation key; the
 * gateway holds none): DATABASE_URL or DATA_DIR (the gateway's store), BASE_RPC_URL /
 * ARBITRUM_RPC_URL, AUTOMATION_PRIVATE_KEY. The engine takes a pass per new block (the head polled every
 * PROTECTION_POLL_MS, default 250) on its leased share of PROTECTION_SHARDS shards (default 64; engines of one
 * key share them); the executor's pass runs every PROTECTION_INTERVAL_MS (default 2000). Each pass is logged at
 * debug level ("pass", with its block, Safes watched, re-read, candidates, confirmed, acts and time).
 */
import { pino } from "pino";
import type { Hex } from "viem";
import { onTreasuryChains } from "@treasury/core/contracts/chains";
import { loadConfig } from "../config";
import { systemClock } from "../lib/clock";
import { SecretBox } from "../lib/secrets";
import { createStores, linksFor, scope } from "../services/context";
import { openDatabase } from "../store/open-database";
import { ProtectionEngine } from "./engine";
import { SafeExecutor } from "./safe-executor";

const key = process.env.AUTOMATION_PRIVATE_KEY as Hex | undefined;
if (!key) {
  process.stderr.write("AUTOMATION_PRIVATE_KEY is required\n");
  process.exit(2);
}
const config = loadConfig();
const logger = pino({ level: config.logLevel, base: { service: "protection-engine" } });
const db = await openDatabase(config.database);
const ctx = scope(
  {
    config,
    db,
    tx: db,
    stores: createStores(db, SecretBox.ephemeral(), { eventLog: config.events.log }),
    clock: systemClock,
    links: linksFor("http://127.0.0.1"),
  },
  "delegations",
  "treasuries",
  "apiKeys",
  "fees",
  "executions",
  "instances",
  "engineShards",
  "protectionClaims",
  "envelopes",
  "safeTransactions",
  "slots",
  "positionSamples",
  "automationNonces",
  "events",
);
const shards = Number(process.env.PROTECTION_SHARDS ?? 64);
const engine = new ProtectionEngine(ctx, { rpcUrls: onTreasuryChains(config.rpcUrls), automationKey: key, shards });
const executor = new SafeExecutor(ctx, { rpcUrls: onTreasuryChains(config.rpcUrls), automationKey: key });
const interval = Number(process.env.PROTECTION_INTERVAL_MS ?? 2000);
const pollMs = Number(process.env.PROTECTION_POLL_MS ?? 250);
logger.info({ automation: engine.address, engine: engine.id, shards, poll_ms: pollMs, interval_ms: interval }, "protection engine running");
// a pass that fails (the store or the RPC away) is logged, and the next block's pass tries again
engine.start(
  pollMs,
  (r) => logger.debug({ ...r, block: r.block?.toString() ?? null }, "pass"),
  (err) => logger.error({ err }, "protection pass failed"),
  (r) => {
    if (r.outcome !== "healthy" && r.outcome !== "not_active") logger.info(r, "protection");
  },
);
const timer = setInterval(async () => {
  try {
    for (const r of await executor.tick()) if (r.outcome !== "awaiting_signatures") logger.info(r, "safe transaction");
  } catch (err) {
    logger.error({ err }, "safe transaction pass failed");
  }
}, interval);
const stop = () => {
  clearInterval(timer);
  void engine
    .stop()
    .catch((err: unknown) => logger.error({ err }, "stopping the engine"))
    .finally(() => void db.close().finally(() => process.exit(0)));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
