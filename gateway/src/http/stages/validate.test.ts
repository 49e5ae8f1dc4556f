/** validation: the route's zod schemas parse body, query and path, or a typed invalid_request names the field. */
import { z } from "@treasury/core/schemas/zod";
import type { Request, Response } from "express";
import { describe, expect, it } from "vitest";
import { routeOf } from "./harness.test-support";
import { handlerContext, validationErrors } from "./validate";

const req = (over: { parsed?: boolean; body?: unknown; query?: unknown; params?: unknown }) =>
  ({ _body: over.parsed ?? over.body !== undefined, body: over.body, query: over.query ?? {}, params: over.params ?? {} }) as unknown as Request;
const res = { locals: {} } as Response;

const spec = routeOf({
  request: {
    body: z.object({ amount: z.number().positive() }),
    query: z.object({ ltv: z.coerce.number().optional() }),
    params: z.object({ id: z.string().regex(/^trs_/) }),
  },
});

describe("validation", () => {
  it("gives the handler the parsed body, query and path parameters", () => {
    const c = handlerContext(spec, req({ body: { amount: 5 }, query: { ltv: "40" }, params: { id: "trs_1" } }), res);
    expect([c.body, c.query, c.params]).toEqual([{ amount: 5 }, { ltv: 40 }, { id: "trs_1" }]);
  });

  it("refuses an invalid input with invalid_request naming where and which field", () => {
    expect(() => handlerContext(spec, req({ body: { amount: -1 }, params: { id: "trs_1" } }), res)).toThrow(
      expect.objectContaining({ code: "invalid_request", fields: { details: [expect.objectContaining({ location: "body", field: "amount" })] } }),
    );
    expect(() => handlerContext(spec, req({ body: { amount: 1 }, params: { id: "x" } }), res)).toThrow(
      expect.objectContaining({ code: "invalid_request", fields: { details: [expect.objectContaining({ location: "path", field: "id" })] } }),
    );
  });

  it("a required body that was not sent is refused; an optional one is {}", () => {
    expect(() => handlerContext(spec, req({ params: { id: "trs_1" } }), res)).toThrow("a JSON body is required");
    const optional = routeOf({ request: { body: z.object({ a: z.number().optional() }), bodyRequired: false } });
    expect(handlerContext(optional, req({}), res).body).toEqual({});
  });

  it("answers invalid_request only on a route that takes input", () => {
    expect(validationErrors(spec)).toEqual(["invalid_request"]);
    expect(validationErrors(routeOf())).toEqual([]);
  });
});
