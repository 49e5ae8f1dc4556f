/**
 * GET /api/v1/public/gateway-status names each chain's Aave version as the chain says: the Pool's POOL_REVISION()
 * read from the RPC, named by the core's table. In front of the fork, a proxy makes the Pool answer a revision the
 * table does not hold (reported as it is, its version null), or not answer at all (both null; the status stays
 * online and reads it again next time).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { encodeAbiParameters, toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aaveVersionOf } from "@treasury/core/contracts/aave-versions";
import { type BaseForkNode } from "../../fixtures/base-fork";
import { call, startTestGateway } from "../helpers/gateway";
import { sharedFork } from "../helpers/shared-chains";

let fork: BaseForkNode;
beforeAll(async () => {
  fork = await sharedFork();
});
afterAll(() => fork?.stop());

const POOL_REVISION = toFunctionSelector("POOL_REVISION()");
type Rpc = { id: number; method: string; params?: [{ data?: string; input?: string }] };

/** the fork behind a proxy that answers the Pool's POOL_REVISION() with `answer` (a revision, or a JSON-RPC error) */
async function poolAnswering(answer: () => number | "error") {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      const msg = JSON.parse(body) as Rpc | Rpc[];
      const list = Array.isArray(msg) ? msg : [msg];
      const isRevision = (m: Rpc) => m.method === "eth_call" && (m.params?.[0]?.data ?? m.params?.[0]?.input)?.startsWith(POOL_REVISION);
      const upstream = list.some((m) => !isRevision(m))
        ? ((await (await fetch(fork.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body })).json()) as unknown)
        : null;
      const upstreamOf = (m: Rpc) => (Array.isArray(upstream) ? (upstream as { id: number }[]).find((u) => u.id === m.id) : upstream);
      const answers = list.map((m) => {
        if (!isRevision(m)) return upstreamOf(m);
        const a = answer();
        return a === "error"
          ? { jsonrpc: "2.0", id: m.id, error: { code: -32000, message: "header not found" } }
          : { jsonrpc: "2.0", id: m.id, result: encodeAbiParameters([{ type: "uint256" }], [BigInt(a)]) };
      });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(Array.isArray(msg) ? answers : answers[0]));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const aaveOf = async (url: string) => {
  const r = await call(url, "GET", "/api/v1/public/gateway-status");
  expect([r.status, r.body.status]).toEqual([200, "online"]);
  return r.body.chains.map((c: { chain: string; aave: unknown }) => [c.chain, c.aave]);
};

describe("GET /api/v1/public/gateway-status: the Aave version per chain, read from the chain", () => {
  it("names the fork's Pool revision and version (Arbitrum, without an RPC, reads nothing)", async () => {
    const gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl });
    try {
      const revision = fork.manifest.aave.pool_revision;
      expect(await aaveOf(gw.url)).toEqual([
        ["base", { pool: AaveV3Base.POOL, pool_revision: revision, version: aaveVersionOf(revision) }],
        ["arbitrum", null],
      ]);
      expect(aaveVersionOf(revision)).toBe("3.6");
    } finally {
      await gw.close();
    }
  });

  it("reports a revision the table does not hold as it is, its version null; a Pool that does not answer as null, read again next time", async () => {
    let answer: number | "error" = 12;
    const proxy = await poolAnswering(() => answer);
    // a gateway keeps a revision it read for a minute: a second gateway reads the Pool's next answers
    const [first, second] = [await startTestGateway({ BASE_RPC_URL: proxy.url }), await startTestGateway({ BASE_RPC_URL: proxy.url })];
    try {
      expect((await aaveOf(first.url))[0]).toEqual(["base", { pool: AaveV3Base.POOL, pool_revision: 12, version: null }]);
      answer = "error";
      expect((await aaveOf(second.url))[0]).toEqual(["base", { pool: AaveV3Base.POOL, pool_revision: null, version: null }]);
      answer = 10;
      expect((await aaveOf(second.url))[0]).toEqual(["base", { pool: AaveV3Base.POOL, pool_revision: 10, version: "3.6" }]);
    } finally {
      await Promise.all([first.close(), second.close()]);
      await proxy.close();
    }
  });
});
