import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "packages/*/src/**/*.test.ts", "gateway/**/*.test.ts", "signer-agent/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    setupFiles: ["test/setup/fast-check.ts"],
    globalSetup: ["test/setup/postgres.ts"],
    fileParallelism: true,
  },
});
