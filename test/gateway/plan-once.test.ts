/**
 * An action's plan is made once, before any store transaction: a wallet-mode convert reads the wallet's Aave
 * position once and asks the pool's quote once (a proxy in front of the fork counts the JSON-RPC calls the
 * gateway sends), and none of them inside a store transaction (the guard would answer 503). Real parts: the
 * Base fork, the gateway, a proven wallet.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { toFunctionSelector } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { QUOTER_V2_ABI } from "@treasury/core/contracts/uniswap-quoter";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { authed, registerProven } from "../helpers/treasury";

let fork: BaseForkNode;
let proxy: http.Server;
let gw: TestGateway;
const bodies: string[] = [];

beforeAll(async () => {
  fork = await startBaseFork();
  proxy = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      bodies.push(body);
      const answer = await fetch(fork.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      res.setHeader("content-type", "application/json");
      res.end(await answer.text());
    });
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  gw = await startTestGateway({ BASE_RPC_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await new Promise((r) => proxy?.close(r));
  await fork?.stop();
});

/** the eth_calls of a function the gateway sent since `from`, by its selector in the calldata */
const calls = (fn: string, abi: readonly unknown[], from: number) => {
  const item = (abi as { type: string; name?: string }[]).find((x) => x.type === "function" && x.name === fn)!;
  const selector = toFunctionSelector(item as never).slice(2);
  return bodies.slice(from).reduce((n, b) => n + b.split(`"0x${selector}`).length - 1, 0);
};

it("a wallet-mode convert: the position read once, the pool quoted once, outside any store transaction", async () => {
  const account = privateKeyToAccount(generatePrivateKey());
  await fork.fund(account.address, 1_000_000_000n);
  const t = await registerProven(gw.url, account);
  const from = bodies.length;
  const r = await authed(gw.url, t.key).post("/api/v1/convert", { amount_usdc: 100, target: "eth" });
  expect(r.status).toBe(202);
  expect(r.body.action).toBe("convert");
  expect(calls("getUserAccountData", AAVE_POOL_ABI, from)).toBe(1);
  expect(calls("quoteExactInputSingle", QUOTER_V2_ABI, from)).toBe(1);
}, 60_000);
