/** Start a real gateway (real HTTP, real SQLite file) for a test. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino, type Logger } from "pino";
import { loadConfig } from "../../gateway/src/config";
import type { Clock } from "../../gateway/src/lib/clock";
import { startGateway, type RunningGateway } from "../../gateway/src/server";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import type { AnyScheme } from "../../gateway/src/x402/schemes/scheme";
import { freshDatabase } from "./store";

export interface TestGateway extends RunningGateway {
  dataDir: string;
  /** the store it runs on (a SQLite file, or its own PostgreSQL database under TEST_STORE=postgres) */
  database: DatabaseLocation;
  logLines: () => Record<string, unknown>[];
  /** stop and start again on the same database file (on the same port when asked) */
  restart(opts?: { samePort?: boolean }): Promise<TestGateway>;
}

export const ADMIN_TOKEN = "test-admin-token-0123456789abcdef";

export async function startTestGateway(
  env: Record<string, string> = {},
  opts: { clock?: Clock; dataDir?: string; database?: DatabaseLocation; schemes?: readonly AnyScheme[] } = {},
): Promise<TestGateway> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "gateway-test-"));
  const config = loadConfig({
    PORT: env.PORT ?? "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    RATE_LIMIT_READ_PER_MIN: "100000",
    RATE_LIMIT_WRITE_PER_MIN: "100000",
    CREDENTIALS_PER_HOUR: "100000",
    ...env,
  });
  const lines: Record<string, unknown>[] = [];
  const stream = { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) };
  const logger: Logger = pino({ level: "info" }, stream);
  const database = opts.database ?? (await freshDatabase(dataDir));
  const running = await startGateway({ config, logger, database, clock: opts.clock, schemes: opts.schemes });
  const self: TestGateway = {
    ...running,
    dataDir,
    database,
    logLines: () => lines,
    restart: async (r = {}) => {
      await running.close();
      // same database file; with samePort, clients holding the URL reach the new process
      return startTestGateway(r.samePort ? { ...env, PORT: String(running.port) } : env, { ...opts, dataDir, database });
    },
  };
  return self;
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function call<T = any>(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}
