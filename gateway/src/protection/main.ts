/**
 * The protection engine and the executor of operators' signed Safe
 * transactions, as their own process (it holds the automation key; the
 * gateway holds none): DATABASE_URL or DATA_DIR (the gateway's store), BASE_RPC_URL /
 * ARBITRUM_RPC_URL, AUTOMATION_PRIVATE_KEY, PROTECTION_INTERVAL_MS (default 2000).
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
  { config, db, tx: db, stores: createStores(db, SecretBox.ephemeral()), clock: systemClock, links: linksFor("http://127.0.0.1") },
  "delegations",
  "treasuries",
  "apiKeys",
  "fees",
  "executions",
  "instances",
  "protectionClaims",
  "envelopes",
  "safeTransactions",
  "slots",
  "positionSamples",
  "automationNonces",
);
const engine = new ProtectionEngine(ctx, { rpcUrls: onTreasuryChains(config.rpcUrls), automationKey: key });
const executor = new SafeExecutor(ctx, { rpcUrls: onTreasuryChains(config.rpcUrls), automationKey: key });
const interval = Number(process.env.PROTECTION_INTERVAL_MS ?? 2000);
logger.info({ automation: engine.address, interval_ms: interval }, "protection engine running");
const timer = setInterval(async () => {
  // a pass that fails (the store or the RPC away) is logged, and the next one tries again
  try {
    for (const r of await engine.tick()) if (r.outcome !== "healthy" && r.outcome !== "not_active") logger.info(r, "protection");
  } catch (err) {
    logger.error({ err }, "protection pass failed");
  }
  try {
    for (const r of await executor.tick()) if (r.outcome !== "awaiting_signatures") logger.info(r, "safe transaction");
  } catch (err) {
    logger.error({ err }, "safe transaction pass failed");
  }
}, interval);
const stop = () => {
  clearInterval(timer);
  void db.close().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
