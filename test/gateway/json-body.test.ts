/**
 * Request bodies: the common JSON request is read by the gateway's own reader (http/content-type.ts),
 * every other one by body-parser; both answer alike. Raw HTTP, so the test controls every header and byte.
 */
import http from "node:http";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

/** a POST to the preview with these exact bytes and headers (Content-Length set unless given) */
function post(body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}/api/v1/public/preview`, { method: "POST", headers: { "content-length": String(bytes.length), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
    });
    req.on("error", reject);
    req.end(bytes);
  });
}

const valid = JSON.stringify({ action: "deposit", amount: 1000 });

describe("JSON request bodies", () => {
  it("reads plain JSON, with or without charset=utf-8, surrounding white space, or a byte order mark", async () => {
    for (const [body, type] of [
      [valid, "application/json"],
      [valid, "application/json; charset=utf-8"],
      [valid, 'Application/JSON;charset="UTF-8"'],
      [`\n  ${valid}  \n`, "application/json"],
      [`\uFEFF${valid}`, "application/json"],
    ] as const) {
      const r = await post(body, { "content-type": type });
      expect(r.status, `${type} ${JSON.stringify(body)}`).toBe(200);
      expect(r.body.action).toBe("deposit");
    }
  });

  it("answers the others as body-parser does: a gzip body is read, another charset is 415, a JSON subtype is read", async () => {
    expect((await post(zlib.gzipSync(valid), { "content-type": "application/json", "content-encoding": "gzip" })).status).toBe(200);
    const latin = await post(valid, { "content-type": "application/json; charset=latin1" });
    expect(latin.status).toBe(415);
    expect(latin.body.error).toBe("unsupported_media_type");
    expect((await post(valid, { "content-type": "application/merge-patch+json" })).status).toBe(200);
  });

  it("malformed, not an object or array, too deep, too large: typed 400 and 413 on either reader", async () => {
    for (const raw of ["{", '{"action": }', '"just a string"', "42", "   "]) {
      const r = await post(raw, { "content-type": "application/json" });
      expect(r.status, raw).toBe(400);
      expect(r.body.error).toBe("invalid_request");
      expect(typeof r.body.request_id).toBe("string");
    }
    const deep = `${"[".repeat(40)}${"]".repeat(40)}`;
    expect((await post(deep, { "content-type": "application/json" })).body.error).toBe("invalid_request");
    const big = JSON.stringify({ action: "deposit", amount: 1, initiator: "x".repeat(200_000) });
    const r = await post(big, { "content-type": "application/json" });
    expect(r.status).toBe(413);
    expect(r.body.error).toBe("payload_too_large");
  });
});
