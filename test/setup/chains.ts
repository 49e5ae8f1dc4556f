/**
 * Global setup: the chains a worker shares between its files (viem's way: one Anvil per worker, a snapshot
 * and a revert between files). A small HTTP broker in vitest's main process, started once per run: a worker
 * asks it for its chain (`POST /<kind>/<VITEST_POOL_ID>/acquire`) and gets the node's RPC URL; the first ask
 * boots the node (the offline Base fork, or the local Base Sepolia with TestUSDC and the x402 contracts), and
 * every ask reverts it to the state it had when booted, so each file starts from a chain no other file
 * touched, whatever the last one did. `/release` reverts it at once. Files of one worker run one after another,
 * so a node serves one file at a time. test/helpers/shared-chains.ts is the workers' side.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { rpc, type AnvilNode } from "../../fixtures/anvil";
import { BASE_BLOCK_SECONDS, startBaseFork } from "../../fixtures/base-fork";
import { startBaseSepolia } from "../../fixtures/base-sepolia";

export type SharedChainKind = "base-fork" | "base-sepolia";

/** what a worker is told of its node */
export interface SharedChainInfo {
  rpcUrl: string;
  port: number;
  chainId: number;
}

const BOOT: Record<SharedChainKind, () => Promise<AnvilNode>> = { "base-fork": () => startBaseFork(), "base-sepolia": () => startBaseSepolia() };

interface Held {
  node: AnvilNode;
  /** the snapshot of the state as booted (Anvil consumes a snapshot when it reverts to it: taken again each time) */
  snapshot: string;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const held = new Map<string, Promise<Held>>();
  /** back to the booted state, with the mining rules the boot set (a revert restores state, not the node's settings) */
  const reset = async (kind: SharedChainKind, h: Held) => {
    if (!(await rpc(h.node.rpcUrl, "evm_revert", [h.snapshot]))) throw new Error(`${kind}: evm_revert ${h.snapshot} failed`);
    // automine, as booted (it replaces interval mining; Anvil's evm_setIntervalMining 0 would stop mining altogether)
    await rpc(h.node.rpcUrl, "evm_setAutomine", [true]);
    // the fork's blocks are BASE_BLOCK_SECONDS apart from the fixture's time, as booted; Base Sepolia's follow the
    // wall clock, which a revert sets back to the snapshot's time (an x402 authorization's validAfter would be ahead)
    if (kind === "base-fork") await rpc(h.node.rpcUrl, "anvil_setBlockTimestampInterval", [BASE_BLOCK_SECONDS]);
    else await rpc(h.node.rpcUrl, "evm_setTime", [Math.floor(Date.now() / 1000)]);
    h.snapshot = (await rpc(h.node.rpcUrl, "evm_snapshot")) as string;
  };
  const acquire = async (kind: SharedChainKind, pool: string): Promise<SharedChainInfo> => {
    const key = `${kind}/${pool}`;
    let entry = held.get(key);
    const fresh = !entry;
    if (!entry) {
      entry = BOOT[kind]().then(async (node) => ({ node, snapshot: (await rpc(node.rpcUrl, "evm_snapshot")) as string }));
      held.set(key, entry);
    }
    const h = await entry;
    if (!fresh) await reset(kind, h);
    return { rpcUrl: h.node.rpcUrl, port: h.node.port, chainId: h.node.chainId };
  };
  const server = http.createServer((req, res) => {
    const [, kind, pool, verb] = (req.url ?? "").split("/");
    const answer = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (req.method !== "POST" || !(kind === "base-fork" || kind === "base-sepolia") || !pool || !(verb === "acquire" || verb === "release")) {
      return answer(404, { error: "POST /<base-fork|base-sepolia>/<pool id>/<acquire|release>" });
    }
    const work =
      verb === "acquire"
        ? acquire(kind, pool)
        : (held.get(`${kind}/${pool}`) ?? Promise.reject(new Error(`${kind}/${pool} was never acquired`))).then((h) => reset(kind, h)).then(() => ({}));
    work.then(
      (body) => answer(200, body),
      (err: Error) => answer(500, { error: err.message }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("chainBroker", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return async () => {
    server.close();
    await Promise.all([...held.values()].map((p) => p.then((h) => h.node.stop()).catch(() => undefined)));
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    chainBroker: string;
  }
}
