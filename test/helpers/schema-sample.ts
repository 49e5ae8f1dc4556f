/**
 * Requests generated from the served OpenAPI document: random instances of a
 * JSON Schema (2020-12, the subset the document uses), honouring every rule
 * the document states, its `x-` rules included (`x-equal-when-both-present`,
 * `x-sum-equals`, declared in packages/core/src/schemas/common.ts). Edge values
 * (minimum, maximum, the smallest step of `multipleOf`) come up often.
 * Patterns are drawn with randexp and checked with the regular expression
 * itself (randexp ignores lookaheads).
 */
import RandExp from "randexp";

type Schema = Record<string, any>;

export class SchemaSampler {
  constructor(
    private readonly doc: { components?: { schemas?: Record<string, Schema> } },
    private readonly random: () => number = Math.random,
  ) {}

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

  sample(schema: Schema, depth = 0): unknown {
    const s = this.resolve(schema);
    if ("const" in s) return s.const;
    if (Array.isArray(s.enum)) return this.pick(s.enum);
    if (Array.isArray(s.oneOf) && !s.type) return this.sample(this.pick(s.oneOf), depth + 1);
    if (Array.isArray(s.anyOf) && !s.type && !s.properties) return this.sample(this.pick(s.anyOf), depth + 1);
    const type = Array.isArray(s.type) ? (s.type.find((t: string) => t !== "null") ?? "null") : (s.type ?? (s.properties ? "object" : "string"));
    switch (type) {
      case "object":
        return this.object(s, depth);
      case "array": {
        const min = s.minItems ?? 0;
        const max = Math.min(s.maxItems ?? min + 3, min + 3);
        return Array.from({ length: this.int(min, max) }, () => this.sample(s.items ?? {}, depth + 1));
      }
      case "integer":
      case "number":
        return this.number(s, type === "integer");
      case "boolean":
        return this.random() < 0.5;
      case "null":
        return null;
      default:
        return this.string(s);
    }
  }

  private object(s: Schema, depth: number): Record<string, unknown> {
    const props: Record<string, Schema> = s.properties ?? {};
    const required = new Set<string>(s.required ?? []);
    // anyOf of required sets: satisfy one branch (more may follow from the optional ones)
    if (Array.isArray(s.anyOf)) for (const r of (this.pick(s.anyOf) as Schema).required ?? []) required.add(r);
    const out: Record<string, unknown> = {};
    for (const [name, p] of Object.entries(props)) {
      if (required.has(name) || (depth < 3 && this.random() < 0.5)) out[name] = this.sample(p, depth + 1);
    }
    // if/then (the document's: a const or enum on a member)
    if (s.if && s.then && this.matches(out, s.if)) {
      for (const r of s.then.required ?? []) if (!(r in out)) out[r] = this.sample(props[r] ?? {}, depth + 1);
      // `then: { not: { required: [...] } }`: members that must be absent
      for (const r of (s.then.not as Schema | undefined)?.required ?? []) delete out[r];
    }
    const equal = s["x-equal-when-both-present"] as string[] | undefined;
    if (equal && equal.every((k) => k in out)) for (const k of equal.slice(1)) out[k] = out[equal[0]!];
    const sum = s["x-sum-equals"] as { members: string[]; equals: number } | undefined;
    if (sum) {
      let left = sum.equals;
      sum.members.forEach((m, i) => {
        const v = i === sum.members.length - 1 ? left : this.int(0, left);
        out[m] = v;
        left -= v;
      });
    }
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

  private number(s: Schema, integer: boolean): number {
    // without multipleOf any number is valid: up to 9 decimals
    const step = integer ? 1 : typeof s.multipleOf === "number" ? s.multipleOf : 10 ** -this.int(0, 9);
    const decimals = Math.max(0, Math.round(-Math.log10(step)));
    const scale = 10 ** decimals;
    const up = (x: number) => Math.ceil(x * scale - 1e-9);
    const down = (x: number) => Math.floor(x * scale + 1e-9);
    let lo = typeof s.minimum === "number" ? up(s.minimum) : typeof s.exclusiveMinimum === "number" ? down(s.exclusiveMinimum) + 1 : 0;
    let hi = typeof s.maximum === "number" ? down(s.maximum) : typeof s.exclusiveMaximum === "number" ? up(s.exclusiveMaximum) - 1 : lo + 100_000 * scale;
    if (hi < lo) return s.multipleOf === undefined && !integer ? this.number({ ...s, multipleOf: 10 ** -9 }, integer) : lo / scale;
    const r = this.random();
    // the edges often, a small value sometimes, else anywhere
    const units = r < 0.15 ? lo : r < 0.3 ? hi : r < 0.45 ? Math.min(hi, lo + this.int(0, 10 ** decimals)) : this.int(lo, hi);
    return Number((units / 10 ** decimals).toFixed(decimals));
  }

  private string(s: Schema): string {
    const min = s.minLength ?? 0;
    const max = Math.min(s.maxLength ?? min + 24, min + 60);
    if (typeof s.pattern === "string") {
      const re = new RegExp(s.pattern);
      const gen = new RandExp(re);
      gen.randInt = (a: number, b: number) => a + Math.floor(this.random() * (b - a + 1));
      gen.max = 6;
      for (let i = 0; i < 200; i++) {
        const v = gen.gen();
        if (re.test(v) && v.length >= min && v.length <= (s.maxLength ?? Infinity) && this.formatOk(s.format, v)) return v;
      }
      throw new Error(`no sample for pattern ${s.pattern}`);
    }
    switch (s.format) {
      case "email":
        return `agent${this.int(0, 9999)}@example.com`;
      case "uri":
        return `https://example.com/${this.int(0, 9999)}`;
      case "date-time":
        return new Date(Date.UTC(2026, 0, 1) + this.int(0, 1e9)).toISOString();
    }
    const letters = "abcdefghijklmnopqrstuvwxyz ";
    const n = this.int(Math.max(min, 1), Math.max(max, 1));
    let v = "";
    for (let i = 0; i < n; i++) v += letters[this.int(0, letters.length - 1)];
    return v;
  }

  private formatOk(format: string | undefined, v: string): boolean {
    if (format === "email") return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v);
    return true;
  }

  private pick<T>(xs: T[]): T {
    return xs[this.int(0, xs.length - 1)]!;
  }

  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }
}

/** a small deterministic generator (mulberry32), so a failure names its seed and repeats */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
