/**
 * The scale bench's world: the offline Base fork (a block gas limit large enough for many deleverages in one
 * block), a gateway on a store (a SQLite file under its own directory, or the store a test passes), the
 * automation key funded, and a context on the same store for engines in this process, its queries counted.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { createTestClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { startBaseFork, type BaseForkNode } from "../../../fixtures/base-fork";
import { loadConfig } from "../../../gateway/src/config";
import { systemClock } from "../../../gateway/src/lib/clock";
import { SecretBox } from "../../../gateway/src/lib/secrets";
import { createStores, linksFor, type AppContext } from "../../../gateway/src/services/context";
import { startGateway, type RunningGateway } from "../../../gateway/src/server";
import type { DatabaseLocation } from "../../../gateway/src/store/db";
import { openDatabase } from "../../../gateway/src/store/open-database";
import { countingDb, type CountingDb } from "./counting-db";

/** room for a hundred deleverages and more in one block */
export const FALL_GAS_LIMIT = "400000000";

export interface World {
  fork: BaseForkNode;
  gw: RunningGateway;
  url: string;
  dataDir: string;
  database: DatabaseLocation;
  automationKey: Hex;
  automation: `0x${string}`;
  anvil: ReturnType<typeof createTestClient>;
  /** a context on the gateway's store for engines in this process; `db` counts its queries */
  engineContext(): Promise<{ ctx: AppContext; db: CountingDb }>;
  close(): Promise<void>;
}

export async function startWorld(o: { database?: DatabaseLocation; dataDir?: string } = {}): Promise<World> {
  const fork = await startBaseFork({ args: ["--gas-limit", FALL_GAS_LIMIT] });
  const dataDir = o.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "protection-scale-"));
  const automationKey = generatePrivateKey();
  const automation = privateKeyToAccount(automationKey).address;
  await fork.fund(automation);
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    BASE_RPC_URL: fork.rpcUrl,
    AUTOMATION_ADDRESS: automation,
    RATE_LIMIT_READ_PER_MIN: "100000000",
    RATE_LIMIT_WRITE_PER_MIN: "100000000",
    CREDENTIALS_PER_HOUR: "1000000",
  });
  const database: DatabaseLocation = o.database ?? { file: path.join(dataDir, "gateway.sqlite") };
  const gw = await startGateway({ config, logger: pino({ level: "silent" }), database });
  const opened: CountingDb[] = [];
  return {
    fork,
    gw,
    url: `http://127.0.0.1:${gw.port}`,
    dataDir,
    database,
    automationKey,
    automation,
    anvil: createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) }),
    async engineContext() {
      const db = countingDb(await openDatabase(database));
      opened.push(db);
      const ctx: AppContext = { config, db, tx: db, stores: createStores(db, SecretBox.ephemeral()), clock: systemClock, links: linksFor("http://127.0.0.1") };
      return { ctx, db };
    },
    async close() {
      for (const db of opened) await db.close().catch(() => undefined);
      await gw.close();
      await fork.stop();
      if (!o.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
