/**
 * The fast unit tests: no chain, no server, no network. Beside the
 * security-critical modules (gateway/src/**, signer-agent/src/**) and the
 * domain's property tests. Mutation testing (stryker.config.json) runs these.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["gateway/**/*.test.ts", "signer-agent/**/*.test.ts", "test/domain/**/*.test.ts"],
    testTimeout: 30_000,
    pool: "threads",
    setupFiles: ["test/setup/fast-check.ts"],
  },
});
