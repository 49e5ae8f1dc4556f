/**
 * x402's `bazaar` extension: discovery metadata of every priced route, made
 * from the route's own declaration (the zod schemas that validate its request
 * and describe its answers in OpenAPI; its documented example), so a catalogue
 * can list the service. The 402 of each priced route carries it in
 * `extensions.bazaar`, and GET /x402/discovery/resources lists them all in the
 * shape of a facilitator's discovery list.
 */
import type { ZodType } from "zod";
import { z } from "@treasury/core/schemas/zod";

export const BAZAAR = "bazaar";

export interface CatalogEntry {
  method: "GET" | "POST";
  path: string;
  body?: ZodType;
  query?: ZodType;
  /** the success answers' schemas (2xx) */
  outputs: ZodType[];
  /** a valid request body (POST) */
  example?: unknown;
}

const jsonSchema = (schema: ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;

/** the catalogue the routes fill as they are registered, read by the payment gate and the discovery route */
export class BazaarCatalog {
  private readonly entries = new Map<string, CatalogEntry>();

  add(entry: CatalogEntry): void {
    this.entries.set(`${entry.method} ${entry.path}`, entry);
  }

  list(): CatalogEntry[] {
    return [...this.entries.values()];
  }

  /**
   * The bazaar extension of one route (info: what to send and what comes back; schema: the shape of info).
   * The answers' schema is in the catalogue's list only (`withOutput`): in a 402's PAYMENT-REQUIRED header
   * it would make the header 8 KB, more than many proxies pass.
   */
  extension(method: string, path: string, opts: { withOutput?: boolean } = {}): { info: Record<string, unknown>; schema: Record<string, unknown> } | undefined {
    const e = this.entries.get(`${method.toUpperCase()} ${path}`);
    if (!e) return undefined;
    const output = !opts.withOutput
      ? { type: "object" }
      : e.outputs.length === 1
        ? jsonSchema(e.outputs[0]!, "output")
        : { anyOf: e.outputs.map((o) => jsonSchema(o, "output")) };
    const input =
      e.method === "POST"
        ? { type: "http", method: "POST", bodyType: "json", body: e.example ?? {} }
        : { type: "http", method: "GET", ...(e.query ? { queryParams: {} } : {}) };
    const inputSchema =
      e.method === "POST"
        ? {
            type: "object",
            properties: {
              type: { const: "http" },
              method: { const: "POST" },
              bodyType: { const: "json" },
              body: e.body ? jsonSchema(e.body, "input") : { type: "object" },
            },
            required: ["type", "method", "bodyType", "body"],
          }
        : {
            type: "object",
            properties: { type: { const: "http" }, method: { const: "GET" }, ...(e.query ? { queryParams: jsonSchema(e.query, "input") } : {}) },
            required: ["type", "method"],
          };
    return {
      info: { input, output: { type: "json" } },
      schema: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { input: inputSchema, output: { type: "object", properties: { type: { const: "json" }, example: output } } },
        required: ["input"],
      },
    };
  }
}
