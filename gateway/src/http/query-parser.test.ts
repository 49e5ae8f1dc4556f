/** The plain-query shortcut answers exactly what Express's own query parser (qs, "extended") answers. */
import express from "express";
import { describe, expect, it } from "vitest";
import { withPlainQueryShortcut } from "./query-parser";

const extended = express().get("query parser fn") as (q: string) => unknown;
const parse = withPlainQueryShortcut(extended);

/** deep equality that also compares each object's prototype (qs gives plain objects) */
const same = (a: unknown, b: unknown): boolean => {
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return Object.is(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
};

describe("withPlainQueryShortcut", () => {
  const cases = [
    "ltv=55",
    "ltv=55.5",
    "limit=10&cursor=abc_def-1",
    "address=0x00000000000000000000000000000000000000ab",
    "a=",
    "a=1&b=",
    "a=1&a=2",
    "a[b]=1",
    "a%5Bb%5D=1",
    "a.b=1",
    "a=1.2.3",
    "__proto__=1",
    "constructor=1",
    "hasOwnProperty=1&toString=2",
    "a=%41",
    "a=+",
    "a=x+y",
    "=1",
    "a",
    "a&b=1",
    "&a=1",
    "a=1&",
    "a==1",
    "a=1;b=2",
    "ltv=55&ltv=60",
    "a[]=1&a[]=2",
    "a=%zz",
    "",
    Array.from({ length: 17 }, (_, i) => `k${i}=v`).join("&"),
    Array.from({ length: 16 }, (_, i) => `k${i}=v`).join("&"),
  ];
  it("answers each known case as qs does", () => {
    for (const q of cases) expect(same(parse(q), extended(q)), q).toBe(true);
  });

  it("answers a URL without a query (Express passes null) as qs does: a fresh plain object each time", () => {
    for (const q of [null, undefined, ""] as unknown as string[]) {
      const [a, b] = [parse(q), parse(q)];
      expect(same(a, extended(q)), String(q)).toBe(true);
      expect(a).toEqual({});
      expect(Object.getPrototypeOf(a)).toBe(Object.prototype);
      expect(a).not.toBe(b); // a handler may write to its req.query
    }
  });

  it("answers generated queries as qs does", () => {
    const names = ["a", "b", "ltv", "limit", "a_b-c", "__proto__", "constructor", "a[b]", "a[]", "x.y", "%41", "", "a b", "A9"];
    const values = ["1", "55.5", "", "x+y", "%zz", "%41", "0xab", "-1", "a=b", "[1]", "1.2.3", "~"];
    const noise = ["&", "=", "[", "]", "%", "+", ";", "a", "1"];
    let seed = 42;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
    let shortcut = 0;
    for (let n = 0; n < 5_000; n++) {
      let q = Array.from({ length: 1 + Math.floor(next() * 4) }, () => (next() < 0.1 ? pick(names) : `${pick(names)}=${pick(values)}`)).join(
        next() < 0.9 ? "&" : ";",
      );
      if (next() < 0.2) q = q.slice(0, Math.floor(next() * q.length)) + pick(noise) + q.slice(Math.floor(next() * q.length));
      expect(same(parse(q), extended(q)), q).toBe(true);
      if (/^[A-Za-z0-9_-]+=[A-Za-z0-9_.-]*(&[A-Za-z0-9_-]+=[A-Za-z0-9_.-]*)*$/.test(q)) shortcut++;
    }
    expect(shortcut).toBeGreaterThan(100); // the generated set does exercise the shortcut, not only the fallback
  });
});
