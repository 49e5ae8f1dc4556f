/**
 * The suite as vitest projects, run together on one pool of workers (`npm test`, `vitest run`):
 *
 * - `unit`: the pure tests beside the modules (vitest.unit.config.ts), once;
 * - `sqlite`: every test under test/ on SQLite;
 * - `postgres`: the store's own tests and the scale tests (test/store, test/scale) again on an embedded
 *   PostgreSQL (test/setup/postgres.ts), each gateway on a database cloned from a migrated template.
 *
 * `--project <name>` runs one of them (docs/TESTING.md). With TEST_STORE=postgres in the environment, every file
 * under test/ runs on PostgreSQL instead (`TEST_STORE=postgres npx vitest run <file>`: any file on PostgreSQL).
 */
import fs from "node:fs";
import path from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** test/setup/durations.json: `<project>:<path>` to milliseconds (`npx tsx test/setup/durations.ts <vitest JSON report>...`) */
const DURATIONS: Record<string, number> = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "test/setup/durations.json"), "utf8"));
/** a file with no duration on record: a typical chain file's */
const UNKNOWN_MS = 10_000;

/**
 * The order files start in, across every project: longest first, so the minutes-long chain files start at once
 * and the short ones fill the other worker around them (on two cores, a long file started last is the run's
 * tail). A file's duration is vitest's own from the last run on this machine when it has one, else the
 * committed one, else a typical one.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const ms = new Map(
      files.map((spec) => {
        const key = `${spec.project.name}:${path.relative(root, spec.moduleId)}`;
        return [spec, this.ctx.cache.getFileTestResults(key)?.duration ?? DURATIONS[key] ?? UNKNOWN_MS];
      }),
    );
    return [...files].sort((a, b) => ms.get(b)! - ms.get(a)!);
  }
}

const everythingOnPostgres = process.env.TEST_STORE === "postgres";

const chainTests = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: "forks" as const,
  setupFiles: ["test/setup/fast-check.ts"],
};

export default defineConfig({
  test: {
    // two files at a time, the unit tests' threads and the chain files' processes in one pool (vitest's default on
    // two cores would be one); VITEST_MAX_WORKERS overrides it
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    projects: [
      "vitest.unit.config.ts",
      ...(everythingOnPostgres
        ? []
        : [{ test: { ...chainTests, name: "sqlite", include: ["test/**/*.test.ts"], env: { TEST_STORE: "sqlite" }, globalSetup: ["test/setup/chains.ts"] } }]),
      {
        test: {
          ...chainTests,
          name: "postgres",
          include: everythingOnPostgres ? ["test/**/*.test.ts"] : ["test/store/**/*.test.ts", "test/scale/**/*.test.ts"],
          env: { TEST_STORE: "postgres" },
          globalSetup: ["test/setup/postgres.ts", "test/setup/chains.ts"],
        },
      },
    ],
  },
});
