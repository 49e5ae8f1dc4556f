/**
 * `npm start` for the gateway alone: configuration from the environment,
 * the SQLite database under DATA_DIR, graceful shutdown on SIGTERM/SIGINT.
 */
import { pino } from "pino";
import { ConfigError, loadConfig } from "./config";
import { startGateway } from "./server";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // log lines are buffered (LOG_BUFFER_BYTES) and written in batches off the request path, flushed every
  // second and on shutdown; 0 writes each line synchronously (a synchronous write per request was the
  // largest single cost of a request: bench/README.md)
  const buffered = config.logBufferBytes > 0;
  const logger = pino(
    { level: config.logLevel, base: { service: "treasury-gateway" } },
    pino.destination({ dest: 1, sync: !buffered, minLength: config.logBufferBytes }),
  );
  const flushing = buffered ? setInterval(() => logger.flush(), 1000) : undefined;
  flushing?.unref();
  const exit = (code: number) => {
    if (flushing) clearInterval(flushing);
    logger.flush(() => process.exit(code));
  };
  const gateway = await startGateway({ config, logger });
  logger.info({ url: gateway.url, data_dir: config.dataDir, admin_api: Boolean(config.adminToken) }, "gateway listening");
  logger.flush();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    gateway
      .close()
      .then(() => {
        logger.info("stopped");
        exit(0);
      })
      .catch((err) => {
        logger.error({ err }, "shutdown failed");
        exit(1);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

void main();
