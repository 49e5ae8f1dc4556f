/**
 * A store transaction does nothing outside the database (@treasury/core/lib/store-transaction): a body that
 * calls a node (the chain gateway's viem clients) or a facilitator (the one kept-alive POST both make) fails
 * with "chain call inside a store transaction", and what it wrote is rolled back; the same calls outside a
 * transaction, and after it, go through. A real JSON-RPC server on a local port, a real store (SQLite, or
 * PostgreSQL with TEST_STORE=postgres).
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keepAlivePost } from "@treasury/core/lib/keep-alive-post";
import { TreasuryError } from "@treasury/core/lib/errors";
import { CHAIN_CALL_IN_TRANSACTION, inStoreTransaction } from "@treasury/core/lib/store-transaction";
import { ChainGateway } from "../../gateway/src/chain/chain-gateway";
import { AutomationNonceStore } from "../../gateway/src/store/automation-nonce-store";
import type { Db } from "../../gateway/src/store/db";
import { openDatabase } from "../../gateway/src/store/open-database";
import { freshDatabase } from "../helpers/store";

let db: Db;
let server: http.Server;
let url: string;
let requests = 0;
const key = "0x00000000000000000000000000000000000000Bb" as const;

beforeAll(async () => {
  db = await openDatabase(await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "no-chain-tx-"))));
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests++;
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      res.setHeader("content-type", "application/json");
      // 42, as a quantity or as a call's 32-byte word
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: method === "eth_call" ? `0x${(42).toString(16).padStart(64, "0")}` : "0x2a" }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await db?.close();
  await new Promise((r) => server?.close(r));
});

describe("no chain call inside a store transaction", () => {
  it("the chain gateway's client answers outside a transaction and is refused inside one, which rolls back", async () => {
    const chain = new ChainGateway({ base: url }, 5_000);
    const nonces = new AutomationNonceStore(db);
    expect(await chain.client("base").getBlockNumber({ cacheTime: 0 })).toBe(42n);
    const before = requests;
    const failed = await db
      .transaction(async () => {
        expect(inStoreTransaction()).toBe(true);
        await nonces.allocate("base", key, 3);
        return chain.client("base").getBlockNumber({ cacheTime: 0 });
      })
      .then(
        () => null,
        (err: Error) => err,
      );
    expect(failed).toBeInstanceOf(Error);
    expect(failed!.message).toContain(CHAIN_CALL_IN_TRANSACTION);
    expect(requests).toBe(before); // the node never saw it
    expect(await nonces.peek("base", key)).toBeUndefined(); // the allocation rolled back
    expect(inStoreTransaction()).toBe(false);
    // after the transaction, the same call goes through
    expect(await chain.client("base").getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(requests).toBe(before + 1);
  });

  it("the chain adapter's refusal names the transaction, not the transport", async () => {
    const chain = new ChainGateway({ base: url }, 5_000);
    const safe = "0x00000000000000000000000000000000000000cc" as const;
    expect(await chain.safeNonce("base", safe)).toBe(42n);
    const refused = await db
      .transaction(() => chain.safeNonce("base", safe))
      .then(
        () => null,
        (err: TreasuryError) => err,
      );
    expect(refused).toBeInstanceOf(TreasuryError);
    expect(refused!.code).toBe("chain_unavailable");
    expect(refused!.message).toBe(`could not read the Safe ${safe}'s nonce on base: ${CHAIN_CALL_IN_TRANSACTION} (${new URL(url).host})`);
  });

  it("the facilitator client's POST is refused inside a transaction, nested ones included", async () => {
    const post = () => keepAlivePost(url, { "content-type": "application/json" }, JSON.stringify({ jsonrpc: "2.0", id: 7, method: "x" }));
    expect((await post()).status).toBe(200);
    const inner = await db
      .transaction(() => db.transaction(async () => (await post()).status))
      .then(
        () => "answered",
        (err: Error) => err.message,
      );
    expect(inner).toBe(`${CHAIN_CALL_IN_TRANSACTION} (${new URL(url).host})`);
  });

  it("a transaction that only uses the store commits", async () => {
    const nonces = new AutomationNonceStore(db);
    expect(await db.transaction(() => nonces.allocate("base", key, 5))).toBe(5);
    expect(await nonces.peek("base", key)).toBe(6);
  });
});
