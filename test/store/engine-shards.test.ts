/**
 * The protection engines' shards (store/engine-shard-store.ts) on the run's store, each engine on its own
 * connection as separate processes would be (TEST_STORE=postgres: a pool each on one database). The clock is
 * the `now` each call is given: a round is every engine's pass at the same instant, 2 s after the last.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DatabaseLocation, Db } from "../../gateway/src/store/db";
import { EngineShardStore, fairShare, SHARD_LEASE_MS, shardOf } from "../../gateway/src/store/engine-shard-store";
import { ENGINE_WATCH_WINDOW_MS, InstanceStore } from "../../gateway/src/store/instance-store";
import { openDatabase } from "../../gateway/src/store/open-database";
import { freshDatabase } from "../helpers/store";

const S = 16;
const PASS_MS = 2_000;
const T0 = Date.parse("2026-11-28T10:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms);

let location: DatabaseLocation;
const opened: Db[] = [];
beforeAll(async () => {
  location = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "engine-shards-")));
});
afterAll(async () => {
  for (const db of opened) await db.close();
});

/** an engine of its own process: its own connection to the store */
async function engineStore(): Promise<EngineShardStore> {
  const db = await openDatabase(location);
  opened.push(db);
  return new EngineShardStore(db);
}

let keys = 0;
/** an automation key of the test's own, so the tests share one database without sharing shards */
const freshKey = () => `0x${(++keys).toString(16).padStart(40, "a")}`;

/**
 * What each engine believes it holds and until when: a shard it got from `acquire` at `t` is its own until
 * t + lease, or until a later `acquire` of its own no longer returns it (given back, at that instant). No two
 * beliefs ever overlap. Passes at one instant are recorded together: what they gave back first (an engine takes
 * a shard given back at the same instant only after the give-back, the store orders them so).
 */
class Ledger {
  private readonly beliefs = new Map<number, { engine: string; until: number }[]>();

  record(t: number, passes: ReadonlyMap<string, number[]>): void {
    for (const [engine, shards] of passes)
      for (const [shard, list] of this.beliefs) for (const b of list) if (b.engine === engine && b.until > t && !shards.includes(shard)) b.until = t;
    for (const [engine, shards] of passes)
      for (const shard of shards) {
        const list = this.beliefs.get(shard) ?? [];
        const other = list.find((b) => b.engine !== engine && b.until > t);
        expect(other, `shard ${shard} given to ${engine} at ${t} while ${other?.engine} holds it until ${other?.until}`).toBeUndefined();
        const mine = list.find((b) => b.engine === engine && b.until >= t);
        if (mine) mine.until = t + SHARD_LEASE_MS;
        else list.push({ engine, until: t + SHARD_LEASE_MS });
        this.beliefs.set(shard, list);
      }
  }
}

/** one round: every engine's pass at `t`, all at once; what each holds after it */
async function round(stores: Map<string, EngineShardStore>, key: string, t: number, ledger?: Ledger): Promise<Map<string, number[]>> {
  const names = [...stores.keys()];
  const got = await Promise.all(names.map((n) => stores.get(n)!.acquire(n, key, S, at(t))));
  const out = new Map(names.map((n, i) => [n, got[i]!]));
  const all = got.flat();
  expect(new Set(all).size, `a shard held twice at ${t}: ${JSON.stringify([...out])}`).toBe(all.length);
  for (const s of all) expect(s >= 0 && s < S).toBe(true);
  ledger?.record(t, out);
  return out;
}

const counts = (held: Map<string, number[]>) => [...held.values()].map((s) => s.length).sort((a, b) => b - a);

describe("the engines' shards", () => {
  it("two engines acquiring at once never both hold a shard, round after round, and split them evenly", async () => {
    const key = freshKey();
    const stores = new Map([
      ["eng_a", await engineStore()],
      ["eng_b", await engineStore()],
    ]);
    const ledger = new Ledger();
    let held = new Map<string, number[]>();
    for (let r = 0; r < 40; r++) held = await round(stores, key, r * PASS_MS, ledger);
    expect(counts(held)).toEqual([8, 8]);
    // stored as returned: every shard held, by the engine that was told it holds it
    const owners = (await stores.get("eng_a")!.owners(at(39 * PASS_MS))).filter((o) => o.automation === key);
    expect(owners.map((o) => o.shard)).toEqual([...Array(S).keys()]);
    for (const o of owners) expect(held.get(o.holder)).toContain(o.shard);
  });

  it("engines that skip passes at random (stalls past their lease included) still never overlap", async () => {
    const key = freshKey();
    const names = ["eng_r1", "eng_r2", "eng_r3"];
    const stores = new Map(await Promise.all(names.map(async (n) => [n, await engineStore()] as const)));
    const ledger = new Ledger();
    let seed = 40;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let t = 0;
    for (let r = 0; r < 40; r++, t += PASS_MS) {
      // each engine makes this pass or skips it (two in three): a run of skips outlasts its lease
      const passing = new Map([...stores].filter(() => random() < 2 / 3));
      if (passing.size > 0) await round(passing, key, t, ledger);
    }
    // all passing again: by the third round every engine has seen the others, given back and taken its share
    let settled = new Map<string, number[]>();
    for (let r = 0; r < 3; r++, t += PASS_MS) settled = await round(stores, key, t, ledger);
    expect(counts(settled)).toEqual([6, 5, 5]);
  });

  it("three engines end with a third each (16 shards: 6, 5, 5)", async () => {
    const key = freshKey();
    const stores = new Map(await Promise.all(["eng_x", "eng_y", "eng_z"].map(async (n) => [n, await engineStore()] as const)));
    const ledger = new Ledger();
    let held = new Map<string, number[]>();
    for (let r = 0; r < 4; r++) held = await round(stores, key, r * PASS_MS, ledger);
    expect(counts(held)).toEqual([6, 5, 5]);
    expect([...held.values()].flat().sort((a, b) => a - b)).toEqual([...Array(S).keys()]);
  });

  it("an engine that stops beating loses its shards to the others within 10 s", async () => {
    const key = freshKey();
    const stores = new Map(await Promise.all(["eng_1", "eng_2", "eng_3"].map(async (n) => [n, await engineStore()] as const)));
    const ledger = new Ledger();
    let t = 0;
    for (; t < 4 * PASS_MS; t += PASS_MS) await round(stores, key, t, ledger);
    const dead = stores.get("eng_2")!;
    stores.delete("eng_2"); // killed: no pass, no beat, no release
    const diedAt = t - PASS_MS;
    let held = new Map<string, number[]>();
    let allTakenAt: number | undefined;
    for (; t <= diedAt + 20_000; t += PASS_MS) {
      held = await round(stores, key, t, ledger);
      if (allTakenAt === undefined && [...held.values()].flat().length === S) allTakenAt = t;
    }
    expect(allTakenAt! - diedAt).toBeLessThanOrEqual(10_000);
    expect(counts(held)).toEqual([8, 8]);
    expect((await dead.owners(at(t))).filter((o) => o.automation === key && o.holder === "eng_2")).toEqual([]);
  });

  it("a holder that lost its shards cannot renew them; it gets its share back only as the others give it", async () => {
    const key = freshKey();
    const a = await engineStore();
    const b = await engineStore();
    expect(await a.acquire("eng_slow", key, S, at(0))).toEqual([...Array(S).keys()]);
    // eng_slow stalls past its lease; eng_fast takes everything
    expect(await b.acquire("eng_fast", key, S, at(SHARD_LEASE_MS + 1))).toEqual([...Array(S).keys()]);
    // eng_slow comes back: none of its old shards is renewed, eng_fast's rows are untouched
    const before = (await b.owners(at(SHARD_LEASE_MS + 2))).filter((o) => o.automation === key);
    expect(await a.acquire("eng_slow", key, S, at(SHARD_LEASE_MS + 2))).toEqual([]);
    expect((await b.owners(at(SHARD_LEASE_MS + 2))).filter((o) => o.automation === key)).toEqual(before);
    // eng_fast's next pass gives back what is above its half, which eng_slow then takes
    expect(await b.acquire("eng_fast", key, S, at(SHARD_LEASE_MS + 3))).toHaveLength(8);
    expect(await a.acquire("eng_slow", key, S, at(SHARD_LEASE_MS + 4))).toHaveLength(8);
  });

  it("a new engine gets its fair share at its second pass, whichever of the engines passes first", async () => {
    for (const newFirst of [false, true]) {
      const key = freshKey();
      const old = new Map([
        ["eng_old1", await engineStore()],
        ["eng_old2", await engineStore()],
      ]);
      const ledger = new Ledger();
      let t = 0;
      for (; t < 3 * PASS_MS; t += PASS_MS) await round(old, key, t, ledger);
      const fresh = new Map([["eng_new", await engineStore()]]);
      // its first pass announces it (nothing is free yet); the others see it at their next and give back the excess
      const passes = async (): Promise<Map<string, number[]>> => {
        const [first, second] = newFirst ? [fresh, old] : [old, fresh];
        const a = await round(first, key, t, ledger);
        const b = await round(second, key, t, ledger);
        t += PASS_MS;
        return new Map([...a, ...b]);
      };
      expect((await passes()).get("eng_new")).toEqual([]);
      const held = await passes();
      expect(counts(held), `new engine passing ${newFirst ? "first" : "last"}`).toEqual([6, 5, 5]);
      expect(held.get("eng_new")!.length).toBeGreaterThanOrEqual(5);
    }
  });

  it("passing all at once, a new engine has its share by its third pass", async () => {
    const key = freshKey();
    const stores = new Map([
      ["eng_old3", await engineStore()],
      ["eng_old4", await engineStore()],
    ]);
    const ledger = new Ledger();
    let t = 0;
    for (; t < 3 * PASS_MS; t += PASS_MS) await round(stores, key, t, ledger);
    stores.set("eng_new2", await engineStore());
    let held = new Map<string, number[]>();
    for (let r = 0; r < 3; r++, t += PASS_MS) held = await round(stores, key, t, ledger);
    expect(counts(held)).toEqual([6, 5, 5]);
  });

  it("a stale heartbeat alone never cuts a lease short: an engine holds what it was told until its lease ends", async () => {
    const key = freshKey();
    const a = await engineStore();
    const b = await engineStore();
    // eng_long took its shards under a longer lease than the others' liveness window
    expect(await a.acquire("eng_long", key, S, at(0), 20_000)).toHaveLength(S);
    // 7 s on, eng_long no longer counts among the live (quota: all 16 for eng_other), but its leases run to 20 s
    expect(await b.acquire("eng_other", key, S, at(7_000))).toEqual([]);
    expect(await b.acquire("eng_other", key, S, at(19_999))).toEqual([]);
    expect(await b.acquire("eng_other", key, S, at(20_000))).toEqual([...Array(S).keys()]);
  });

  it("a released engine's shards are free at once, and it no longer counts among the live", async () => {
    const key = freshKey();
    const stores = new Map([
      ["eng_stay", await engineStore()],
      ["eng_go", await engineStore()],
    ]);
    for (let t = 0; t < 3 * PASS_MS; t += PASS_MS) await round(stores, key, t);
    await stores.get("eng_go")!.release("eng_go");
    expect(await stores.get("eng_stay")!.acquire("eng_stay", key, S, at(3 * PASS_MS))).toEqual([...Array(S).keys()]);
  });

  it("shards beyond a smaller shard count are given back; the quotas add up to the shard count", async () => {
    const key = freshKey();
    const a = await engineStore();
    expect(await a.acquire("eng_s", key, S, at(0))).toHaveLength(S);
    expect(await a.acquire("eng_s", key, 4, at(1))).toEqual([0, 1, 2, 3]);
    expect((await a.owners(at(2))).filter((o) => o.automation === key).map((o) => o.shard)).toEqual([0, 1, 2, 3]);
    for (const [shards, engines] of [
      [16, 3],
      [4, 3],
      [1, 2],
      [7, 7],
      [5, 9],
    ] as const)
      expect([...Array(engines).keys()].reduce((sum, rank) => sum + fairShare(shards, engines, rank), 0)).toBe(shards);
    const spread = new Array(S).fill(0);
    for (let i = 0; i < 1_600; i++) spread[shardOf(`trs_${i.toString(36)}`, S)]++;
    for (const n of spread) expect(n).toBeGreaterThan(60); // about 100 each
  });
});

describe("the engines' heartbeats", () => {
  it("each engine beats in a row of its own; a key is watched while any of its engines beat within the window", async () => {
    const db = await openDatabase(location);
    opened.push(db);
    const instances = new InstanceStore(db);
    const key = freshKey();
    const now = at(100_000);
    expect(await instances.engineWatching(key, now)).toBe(false);
    await instances.beatEngine("eng_h1", key.toUpperCase().replace("0X", "0x"), new Date(now.getTime() - ENGINE_WATCH_WINDOW_MS - 1));
    expect(await instances.engineWatching(key, now)).toBe(false);
    await instances.beatEngine("eng_h2", key, new Date(now.getTime() - 5_000));
    expect(await instances.engineWatching(key, now)).toBe(true);
    // the other engine's old beat did not overwrite this one's
    await instances.beatEngine("eng_h1", key, new Date(now.getTime() - ENGINE_WATCH_WINDOW_MS - 1));
    expect(await instances.engineWatching(key, now)).toBe(true);
    expect(await instances.engineWatching(freshKey(), now)).toBe(false);
    await instances.forgetEngine("eng_h2");
    expect(await instances.engineWatching(key, now)).toBe(false);
  });
});
