/** The answer: a result or a typed 4xx as the outcome an Idempotency-Key stores; 5xx and the unexpected rethrown. */
import { TreasuryError } from "@treasury/core/lib/errors";
import type { Response } from "express";
import { afterEach, describe, expect, it } from "vitest";
import { JsonText } from "../json-response";
import { routeOf, serveStage, type StageHarness } from "./harness.test-support";
import { outcomeOf, sendOutcome, sendResult, settledResult } from "./respond";

let h: StageHarness | undefined;
afterEach(async () => h?.close());

const res = { locals: { requestId: "req_1" } } as unknown as Response;

describe("respond", () => {
  it("an outcome is the result's status, headers and JSON text, or a typed 4xx's body", async () => {
    expect(await outcomeOf(res, async () => ({ status: 201, body: { a: 1 }, headers: { X: "1" } }))).toEqual({
      status: 201,
      headers: { X: "1" },
      body: '{"a":1}',
    });
    expect(await outcomeOf(res, async () => ({ status: 200, body: new JsonText('{"kept":true}') }))).toEqual({
      status: 200,
      headers: {},
      body: '{"kept":true}',
    });
    const refused = await outcomeOf(res, async () => {
      throw new TreasuryError("treasury_not_found", "none", { id: "x" }, { "Retry-After": "1" });
    });
    expect(refused).toEqual({
      status: 404,
      headers: { "Retry-After": "1" },
      body: JSON.stringify({ error: "treasury_not_found", message: "none", request_id: "req_1", id: "x" }),
    });
  });

  it("a 5xx and an unexpected error are rethrown, never stored", async () => {
    await expect(outcomeOf(res, async () => Promise.reject(new TreasuryError("chain_unavailable", "down")))).rejects.toThrow("down");
    await expect(outcomeOf(res, async () => Promise.reject(new Error("bug")))).rejects.toThrow("bug");
    expect(() => settledResult({ status: 200, body: Promise.resolve() })).toThrow("a missing await");
  });

  it("sends an outcome with Idempotent-Replayed, and a result with its headers", async () => {
    let replayed = false;
    const answer = {
      run: async (s: { res: Response; req: { path: string } }) =>
        s.req.path === "/outcome"
          ? sendOutcome(s.res, { status: 409, headers: { "Retry-After": "1" }, body: '{"x":1}' }, replayed)
          : sendResult(s.res, { status: 202, body: { y: 2 }, headers: { "X-Y": "2" } }),
    };
    h = await serveStage(answer, routeOf());
    const first = await h.call("GET", "/outcome");
    replayed = true;
    const again = await h.call("GET", "/outcome");
    expect([
      first.status,
      first.text,
      first.headers.get("retry-after"),
      first.headers.get("idempotent-replayed"),
      again.headers.get("idempotent-replayed"),
    ]).toEqual([409, '{"x":1}', "1", "false", "true"]);
    const result = await h.call("GET", "/result");
    expect([result.status, result.body, result.headers.get("x-y")]).toEqual([202, { y: 2 }, "2"]);
  });
});
