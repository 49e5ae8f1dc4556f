/**
 * The chains a worker shares between its files (test/setup/chains.ts): `sharedFork()` in place of
 * `startBaseFork()`, `sharedBaseSepolia()` in place of `startBaseSepolia()`, in a file's beforeAll. The node
 * comes back in the state it had when booted (evm_revert to the broker's snapshot) and its `stop()`, in
 * afterAll, reverts it again instead of stopping it. For files that only read and act on the chain: one that
 * needs its own mining mode or block times, or stops or kills its node, boots its own.
 */
import type { ChildProcess } from "node:child_process";
import { inject } from "vitest";
import type { AnvilNode } from "../../fixtures/anvil";
import { baseForkAt, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { baseSepoliaAt, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import type { SharedChainInfo, SharedChainKind } from "../setup/chains";

async function broker(kind: SharedChainKind, verb: "acquire" | "release"): Promise<SharedChainInfo> {
  const url = inject("chainBroker");
  if (!url) throw new Error("no chain broker: test/setup/chains.ts is not a globalSetup of this project (vitest.config.ts)");
  const res = await fetch(`${url}/${kind}/${process.env.VITEST_POOL_ID ?? "1"}/${verb}`, { method: "POST" });
  const body = (await res.json()) as SharedChainInfo & { error?: string };
  if (!res.ok) throw new Error(`the chain broker's ${verb} of ${kind}: ${body.error}`);
  return body;
}

async function shared(kind: SharedChainKind): Promise<AnvilNode> {
  const info = await broker(kind, "acquire");
  return {
    ...info,
    // the broker's process owns the node: no file may stop or kill it
    process: undefined as unknown as ChildProcess,
    restored: false,
    stop: async () => void (await broker(kind, "release")),
  };
}

/** this worker's offline Base fork, as booted from the fixture; with BASE_FORK_URL, a fork of that chain of the file's own */
export const sharedFork = async (): Promise<BaseForkNode> => (process.env.BASE_FORK_URL ? startBaseFork() : baseForkAt(await shared("base-fork")));

/** this worker's local Base Sepolia (TestUSDC, the x402 contracts), as set up */
export const sharedBaseSepolia = async (): Promise<BaseSepoliaNode> => baseSepoliaAt(await shared("base-sepolia"));
