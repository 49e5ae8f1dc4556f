/**
 * The Solidity tests (contracts-abi/test, `forge test`) run on a fork of the
 * offline Base fixture: the real Aave V3 Pool, its oracle, Uniswap V3 and Safe
 * 1.4.1 at their Base addresses. This boots the fixture's Anvil, runs
 * `forge test --fork-url` against it with the fixture's feed and pool
 * addresses in the environment, and exits with forge's code.
 *
 *   npm run test:contracts [-- forge test flags, e.g. --match-test Reentrant -vvv]
 */
import { spawnSync } from "node:child_process";
import { forkManifest, startBaseFork } from "../fixtures/base-fork";

export async function runForgeTests(extra: string[] = []): Promise<{ status: number; output: string }> {
  const fork = await startBaseFork();
  try {
    const manifest = forkManifest();
    const run = spawnSync("npx", ["forge", "test", "--fork-url", fork.rpcUrl, ...extra], {
      encoding: "utf8",
      env: { ...process.env, FORK_WETH_FEED: manifest.price_feeds.WETH, FORK_WETH_USDC_POOL: manifest.uniswap_v3.pools.WETH!, NO_COLOR: "1" },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { status: run.status ?? 1, output: `${run.stdout}${run.stderr}` };
  } finally {
    await fork.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { status, output } = await runForgeTests(process.argv.slice(2));
  process.stdout.write(output);
  process.exit(status);
}
