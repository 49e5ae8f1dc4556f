/**
 * The `unit` project (vitest.config.ts): the fast tests beside the modules
 * (packages/core/src/**, gateway/src/**, signer-agent/src/**), the domain's
 * property tests among them; no chain, no server, no network. Mutation testing
 * (stryker.config.json) runs these.
 *
 * `@treasury/core` is aliased to this checkout's packages/core/src: Stryker runs
 * the tests in a copy of the repository whose node_modules is a link to the
 * original one, where the package's link would lead back to the unmutated sources.
 */
import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: [{ find: /^@treasury\/core\/(.*)$/, replacement: path.join(import.meta.dirname, "packages", "core", "src", "$1") }],
  },
  test: {
    name: "unit",
    include: ["packages/*/src/**/*.test.ts", "gateway/**/*.test.ts", "signer-agent/**/*.test.ts"],
    testTimeout: 30_000,
    pool: "threads",
    setupFiles: ["test/setup/fast-check.ts"],
  },
});
