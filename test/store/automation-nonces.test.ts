/**
 * The automation key's nonces, given out by the store (gateway/src/store/automation-nonce-store.ts): each
 * allocation is max(the store's next, the node's pending count), distinct under concurrent senders on one
 * store, and given back when the transaction that took it rolls back. SQLite always; PostgreSQL with
 * TEST_STORE=postgres.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AutomationNonceStore } from "../../gateway/src/store/automation-nonce-store";
import type { Db } from "../../gateway/src/store/db";
import { openDatabase } from "../../gateway/src/store/open-database";
import { freshDatabase } from "../helpers/store";

let db: Db;
let nonces: AutomationNonceStore;
const key = "0x00000000000000000000000000000000000000Aa" as const;

beforeAll(async () => {
  db = await openDatabase(await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "nonces-"))));
  nonces = new AutomationNonceStore(db);
});
afterAll(async () => {
  await db?.close();
});

describe("the automation key's nonces", () => {
  it("are max(the store's next, the node's pending count), one past the last given out", async () => {
    expect(await nonces.peek("base", key)).toBeUndefined();
    expect(await nonces.allocate("base", key, 7)).toBe(7);
    // the node still says 7 pending (the first is not broadcast yet): the store says 8
    expect(await nonces.allocate("base", key, 7)).toBe(8);
    // the key sent transactions outside the store: the node's count is the floor
    expect(await nonces.allocate("base", key, 20)).toBe(20);
    expect(await nonces.allocate("base", key.toLowerCase() as `0x${string}`, 0)).toBe(21);
    expect(await nonces.peek("base", key)).toBe(22);
    // another chain is another sequence
    expect(await nonces.allocate("arbitrum", key, 0)).toBe(0);
  });

  it("are distinct under concurrent senders, each in its own store transaction", async () => {
    const other = "0x00000000000000000000000000000000000000bB" as const;
    const got = await Promise.all(Array.from({ length: 20 }, () => db.transaction(() => nonces.allocate("base", other, 3))));
    expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => 3 + i));
  });

  it("are given back when the transaction that took one rolls back (its bytes were never recorded)", async () => {
    const k = "0x00000000000000000000000000000000000000cC" as const;
    expect(await nonces.allocate("base", k, 0)).toBe(0);
    await expect(
      db.transaction(async () => {
        expect(await nonces.allocate("base", k, 0)).toBe(1);
        throw new Error("the claim was lost");
      }),
    ).rejects.toThrow(/lost/);
    expect(await nonces.allocate("base", k, 0)).toBe(1);
  });
});
