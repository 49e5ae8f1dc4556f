/** runReserved: validate, reserve under the request's slot holder, run, release whatever the handler did. */
import { TreasuryError } from "@treasury/core/lib/errors";
import { z } from "@treasury/core/schemas/zod";
import type { Request, Response } from "express";
import { describe, expect, it } from "vitest";
import { routeOf, type CallLog } from "./harness.test-support";
import { runReserved } from "./reserve";

const exchange = (body: unknown) => ({ req: { _body: true, body, query: {}, params: {} } as unknown as Request, res: { locals: {} } as Response });

describe("runReserved", () => {
  it("reserves under one holder per request, runs the handler with the parsed input, releases", async () => {
    const log: CallLog = [];
    const spec = routeOf({
      request: { body: z.object({ n: z.number() }) },
      reserve: async ({ body }, holder) => (log.push(["reserve", body, holder]), async () => void log.push(["release"])),
      handler: ({ body, res }) => (log.push(["handler", res.locals.slotHolder]), { status: 200, body }),
    });
    const { req, res } = exchange({ n: 1 });
    expect(await runReserved({ spec, req, res })).toEqual({ status: 200, body: { n: 1 } });
    const holder = res.locals.slotHolder as string;
    expect(holder).toMatch(/^slot_/);
    expect(log).toEqual([["reserve", { n: 1 }, holder], ["handler", holder], ["release"]]);
  });

  it("releases when the handler throws; an invalid input is refused before anything is reserved", async () => {
    const log: CallLog = [];
    const spec = routeOf({
      request: { body: z.object({ n: z.number() }) },
      reserve: async () => (log.push(["reserve"]), async () => void log.push(["release"])),
      handler: () => {
        throw new TreasuryError("conflicting_operation", "busy");
      },
    });
    await expect(runReserved({ spec, ...exchange({ n: 1 }) })).rejects.toThrow("busy");
    await expect(runReserved({ spec, ...exchange({ n: "one" }) })).rejects.toMatchObject({ code: "invalid_request" });
    expect(log).toEqual([["reserve"], ["release"]]);
  });

  it("a route without reserve just runs its handler", async () => {
    expect(await runReserved({ spec: routeOf(), ...exchange({}) })).toEqual({ status: 200, body: { ok: true } });
  });
});
