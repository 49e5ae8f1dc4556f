/**
 * Requests drawn from the served OpenAPI document: fast-check arbitraries of
 * *any* instance a schema allows (JSON Schema 2020-12, the subset the
 * document uses), honouring every rule the document states, its `x-` rules
 * included (`x-equal-when-both-present`, `x-sum-equals`, declared in
 * packages/core/src/schemas/common.ts). Strings matching a pattern come from
 * `fc.stringMatching` (a lookahead, which it cannot draw, is left out of the
 * drawing and checked on what is drawn), within minLength and maxLength;
 * numbers are whole steps of `multipleOf` between the bounds (fast-check
 * draws the edges often); `date-time` without a pattern is any RFC 3339 time, and a `date-time` is
 * also often near the present.
 */
import fc from "fast-check";

type Schema = Record<string, any>;

/** the pattern without its lookaheads (`(?=...)`, `(?!...)`): what fc.stringMatching can draw */
export function withoutLookaheads(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    if (pattern.startsWith("(?=", i) || pattern.startsWith("(?!", i)) {
      let depth = 0;
      let inClass = false;
      for (; i < pattern.length; i++) {
        const c = pattern[i]!;
        if (c === "\\") i++;
        else if (inClass) inClass = c !== "]";
        else if (c === "[") inClass = true;
        else if (c === "(") depth++;
        else if (c === ")" && --depth === 0) break;
      }
      continue;
    }
    out += pattern[i];
  }
  return out;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** any RFC 3339 date-time (the `date-time` format): upper or lower case T and Z, any offset, fractions of any length */
const rfc3339 = fc
  .record({
    date: fc.date({ min: new Date("0000-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }),
    t: fc.constantFrom("T", "t"),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
    offset: fc.oneof(fc.constantFrom("Z", "z"), fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))),
  })
  .map(({ date, t, fraction, offset }) => {
    const d = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
    const time = `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${fraction === undefined ? "" : `.${fraction}`}`;
    return `${d}${t}${time}${typeof offset === "string" ? offset : `${offset[0]}${pad(offset[1])}:${pad(offset[2])}`}`;
  });

/** a time within ten minutes of the present, as toISOString writes it */
const nearNow = fc.integer({ min: -600_000, max: 600_000 }).map((ms) => new Date(Date.now() + ms).toISOString());

export class SchemaArbitraries {
  constructor(private readonly doc: { components?: { schemas?: Record<string, Schema> } }) {}

  resolve(s: Schema): Schema {
    let cur = s;
    for (let i = 0; cur && typeof cur.$ref === "string" && i < 20; i++) {
      const name = cur.$ref.replace("#/components/schemas/", "");
      cur = { ...this.doc.components!.schemas![name]!, ...Object.fromEntries(Object.entries(cur).filter(([k]) => k !== "$ref")) };
    }
    if (Array.isArray(cur.allOf)) {
      const merged: Schema = { ...cur };
      delete merged.allOf;
      for (const part of cur.allOf as Schema[]) {
        const r = this.resolve(part);
        merged.properties = { ...(merged.properties ?? {}), ...(r.properties ?? {}) };
        merged.required = [...(merged.required ?? []), ...(r.required ?? [])];
        for (const [k, v] of Object.entries(r)) if (!(k in merged)) merged[k] = v;
      }
      return merged;
    }
    return cur;
  }

  /** every value `schema` allows (optional members nested deeper than `depth` 3 are left out) */
  of(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    if ("const" in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    if (Array.isArray(s.oneOf) && !s.type) return fc.oneof(...s.oneOf.map((o: Schema) => this.of(o, depth + 1)));
    if (Array.isArray(s.anyOf) && !s.type && !s.properties) return fc.oneof(...s.anyOf.map((o: Schema) => this.of(o, depth + 1)));
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type ?? (s.properties ? "object" : "string")];
    const nonNull = types.filter((t) => t !== "null");
    if (nonNull.length === 0) return fc.constant(null);
    const arbs = nonNull.map((t) => this.ofType(t, s, depth));
    const one = arbs.length === 1 ? arbs[0]! : fc.oneof(...arbs);
    return types.includes("null") ? fc.oneof({ arbitrary: one, weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }) : one;
  }

  private ofType(type: string, s: Schema, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case "object":
        return this.object(s, depth);
      case "array": {
        const minLength = s.minItems ?? 0;
        return fc.array(this.of(s.items ?? {}, depth + 1), { minLength, maxLength: Math.min(s.maxItems ?? minLength + 3, minLength + 3) });
      }
      case "integer":
      case "number":
        return this.number(s, type === "integer");
      case "boolean":
        return fc.boolean();
      default:
        return this.string(s);
    }
  }

  private object(s: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const props: Record<string, Schema> = s.properties ?? {};
    // anyOf of required sets: one branch is required (more may follow from the optional members)
    const branches: string[][] = Array.isArray(s.anyOf) ? s.anyOf.map((b: Schema) => (b.required ?? []) as string[]) : [[]];
    const all = Object.fromEntries(Object.entries(props).map(([k, p]) => [k, this.of(p, depth + 1)]));
    return fc.constantFrom(...branches).chain((branch) => {
      const required = new Set<string>([...(s.required ?? []), ...branch]);
      const keys = Object.keys(props).filter((k) => required.has(k) || depth < 3);
      const drawn = fc.record(Object.fromEntries(keys.map((k) => [k, all[k]!])), { requiredKeys: keys.filter((k) => required.has(k)) });
      // a value of every member, for the rules that add one
      return fc.tuple(drawn, fc.record(all), this.sums(s)).map(([value, spare, sums]) => this.rules(s, { ...value }, spare, sums));
    });
  }

  /** the members of `x-sum-equals`: numbers that add up to its value (decimals as their `multipleOf` allows, else up to 9) */
  private sums(s: Schema): fc.Arbitrary<number[]> {
    const sum = s["x-sum-equals"] as { members: string[]; equals: number } | undefined;
    if (!sum) return fc.constant([]);
    const member = this.resolve(s.properties?.[sum.members[0]!] ?? {});
    const decimals =
      member.type === "integer"
        ? fc.constant(0)
        : typeof member.multipleOf === "number"
          ? fc.constant(Math.max(0, Math.round(-Math.log10(member.multipleOf))))
          : fc.integer({ min: 0, max: 9 });
    return decimals.chain((d) => {
      const total = Math.round(sum.equals * 10 ** d);
      const cuts = fc.array(fc.integer({ min: 0, max: total }), { minLength: sum.members.length - 1, maxLength: sum.members.length - 1 });
      return cuts.map((c) => {
        const edges = [0, ...c.sort((a, b) => a - b), total];
        return sum.members.map((_, i) => Number(((edges[i + 1]! - edges[i]!) / 10 ** d).toFixed(d)));
      });
    });
  }

  private rules(s: Schema, out: Record<string, unknown>, spare: Record<string, unknown>, sums: number[]): Record<string, unknown> {
    // if/then (the document's: a const or enum on a member)
    if (s.if && s.then && this.matches(out, s.if)) {
      for (const r of s.then.required ?? []) if (!(r in out)) out[r] = spare[r];
      // `then: { not: { required: [...] } }`: members that must be absent
      for (const r of (s.then.not as Schema | undefined)?.required ?? []) delete out[r];
    }
    const equal = s["x-equal-when-both-present"] as string[] | undefined;
    if (equal && equal.every((k) => k in out)) for (const k of equal.slice(1)) out[k] = out[equal[0]!];
    const sum = s["x-sum-equals"] as { members: string[] } | undefined;
    sum?.members.forEach((m, i) => (out[m] = sums[i]));
    return out;
  }

  private matches(value: Record<string, unknown>, cond: Schema): boolean {
    for (const r of cond.required ?? []) if (!(r in value)) return false;
    for (const [k, p] of Object.entries<Schema>(cond.properties ?? {})) {
      if (!(k in value)) continue;
      if ("const" in p && value[k] !== p.const) return false;
      if (Array.isArray(p.enum) && !p.enum.includes(value[k])) return false;
    }
    return true;
  }

  private number(s: Schema, integer: boolean): fc.Arbitrary<number> {
    // without multipleOf any number is valid: up to 9 decimals
    const decimalsOf = (step: number) => Math.max(0, Math.round(-Math.log10(step)));
    const decimals = integer ? fc.constant(0) : typeof s.multipleOf === "number" ? fc.constant(decimalsOf(s.multipleOf)) : fc.integer({ min: 0, max: 9 });
    return decimals.chain((d) => {
      const scale = 10 ** d;
      const up = (x: number) => Math.ceil(x * scale - 1e-9);
      const down = (x: number) => Math.floor(x * scale + 1e-9);
      const lo = typeof s.minimum === "number" ? up(s.minimum) : typeof s.exclusiveMinimum === "number" ? down(s.exclusiveMinimum) + 1 : 0;
      const hi = typeof s.maximum === "number" ? down(s.maximum) : typeof s.exclusiveMaximum === "number" ? up(s.exclusiveMaximum) - 1 : lo + 100_000 * scale;
      if (hi < lo) throw new Error(`no number within ${JSON.stringify(s)}`);
      return fc.integer({ min: lo, max: Math.min(hi, Number.MAX_SAFE_INTEGER) }).map((units) => Number((units / scale).toFixed(d)));
    });
  }

  private string(s: Schema): fc.Arbitrary<string> {
    const min = s.minLength ?? 0;
    const max = s.maxLength ?? Infinity;
    // lengths count code points (JSON Schema)
    const fits = (v: string) => [...v].length >= min && [...v].length <= max;
    if (typeof s.pattern === "string") {
      const re = new RegExp(s.pattern, "u");
      const matching = fc.stringMatching(new RegExp(withoutLookaheads(s.pattern), "u"));
      // a time also near the present (a window such as a signed statement's reaches past its time check)
      const drawn = s.format === "date-time" ? fc.oneof(matching, nearNow) : matching;
      return drawn.filter((v) => re.test(v) && fits(v) && this.formatOk(s.format, v));
    }
    switch (s.format) {
      case "email":
        return fc.emailAddress().filter(fits);
      case "uri":
        return fc.webUrl().filter(fits);
      case "date-time":
        return fc.oneof(rfc3339, nearNow);
    }
    return fc.string({ unit: "binary", minLength: min, maxLength: Math.min(max, min + 60) }).filter(fits);
  }

  private formatOk(format: string | undefined, v: string): boolean {
    if (format === "email") return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v);
    if (format === "date-time") return /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(v);
    return true;
  }
}
