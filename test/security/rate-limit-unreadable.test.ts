/**
 * The rate limit never turns a header it cannot read into a 500: a credential resolver that throws (at once or
 * later) names nobody, and the request is counted by its client address in the write window, as an unproven
 * payer is, then goes on to the stages that refuse it with their typed error. On the real store of the run.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorHandler } from "../../gateway/src/http/errors";
import { rateLimits, type CredentialResolver } from "../../gateway/src/http/rate-limit";
import type { Db } from "../../gateway/src/store/db";
import { openDatabase } from "../../gateway/src/store/open-database";
import { RateLimitStore } from "../../gateway/src/store/rate-limit-store";
import { freshDatabase } from "../helpers/store";

let db: Db;
beforeAll(async () => {
  db = await openDatabase(await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "rate-limit-"))));
});
afterAll(() => db?.close());

async function serve(credentialOf: CredentialResolver): Promise<{ status: number; limit: string | null }> {
  const app = express();
  app.use(rateLimits({ readPerWindow: 100, writePerWindow: 7, windowMs: 60_000, counters: new RateLimitStore(db), credentialOf }));
  app.get("/r", (_req, res) => void res.json({ ok: true }));
  app.use(errorHandler({ error: () => undefined }));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  try {
    const r = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/r`);
    return { status: r.status, limit: r.headers.get("x-ratelimit-limit") };
  } finally {
    server.close();
  }
}

describe("the rate limit's identity of an unreadable header", () => {
  it("a resolver that throws at once, or rejects, counts the request by address in the write window: no 500", async () => {
    const throwsNow: CredentialResolver = () => {
      throw new TypeError("Cannot read properties of null (reading 'channelConfig')");
    };
    const rejects: CredentialResolver = () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'scheme')"));
    for (const resolver of [throwsNow, rejects]) expect(await serve(resolver)).toEqual({ status: 200, limit: "7" });
  });
});
