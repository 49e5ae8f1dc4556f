/**
 * The chain clients' transport: what viem's own `http` transport (over `fetch`) sends and answers, over
 * Node's HTTP client. One scripted JSON-RPC server answers both; each case compares the two.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, http as viemHttp, type HttpTransportConfig, type Transport } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedServer, type ScriptedAnswer, type ScriptedServer } from "../../../../test/helpers/scripted-server";
import { rpcHttp } from "./rpc-transport";

let scripted: ScriptedServer;
let url: string;
beforeAll(async () => {
  scripted = await startScriptedServer();
  url = scripted.url;
});
afterAll(() => scripted.close());
/** how the next requests are answered: a status, a content type and a body, or no answer at all */
const answerWith = (a: ScriptedAnswer) => (scripted.answer = a);

const result = (id: unknown, value: unknown) => ({ jsonrpc: "2.0", id, result: value });
const outcome = (run: () => Promise<unknown>) =>
  run().then(
    (value) => ({ value }),
    (err: Error & { status?: number; details?: string; shortMessage?: string; code?: number }) => ({
      error: err.constructor.name,
      status: err.status,
      details: err.details,
      short: err.shortMessage,
      code: err.code,
    }),
  );

/** the same call through viem's http transport and through rpcHttp, what the server saw of each and what each answered */
async function both(run: (client: ReturnType<typeof createPublicClient>) => Promise<unknown>, config: HttpTransportConfig = {}, target = url) {
  const results = [];
  const requests = [];
  for (const make of [viemHttp, rpcHttp] as ((u: string, c: HttpTransportConfig) => Transport)[]) {
    scripted.seen.length = 0;
    results.push(await outcome(() => run(createPublicClient({ transport: make(target, { retryCount: 0, ...config }) }))));
    requests.push(scripted.seen.map(({ url: _url, ...s }) => ({ ...s, body: stripIds(s.body) })));
  }
  expect(requests[1]).toEqual(requests[0]);
  return { stock: results[0], ours: results[1], requests: requests[1]! };
}
const stripIds = (b: any): unknown => (Array.isArray(b) ? b.map(stripIds) : { ...b, id: typeof b.id });

describe("rpcHttp: viem's http transport over Node's HTTP client", () => {
  it("sends the same request and answers the same result", async () => {
    answerWith((b) => ({ status: 200, body: JSON.stringify(result(b.id, "0x2a")) }));
    const r = await both((c) => c.getBlockNumber({ cacheTime: 0 }));
    expect(r.ours).toEqual({ value: 42n });
    expect(r.ours).toEqual(r.stock);
    expect(r.requests).toEqual([
      { method: "POST", contentType: "application/json", auth: undefined, body: { jsonrpc: "2.0", id: "number", method: "eth_blockNumber" } },
    ]);
  });

  it("passes the URL's credentials and the configured headers", async () => {
    answerWith((b) => ({ status: 200, body: JSON.stringify(result(b.id, "0x1")) }));
    const r = await both((c) => c.getChainId(), { fetchOptions: { headers: { "X-Extra": "1" } } }, url.replace("http://", "http://user:pass@"));
    expect(r.ours).toEqual({ value: 1 });
    expect(r.requests[0]!.auth).toBe(`Basic ${Buffer.from("user:pass").toString("base64")}`);
  });

  it("batches as viem batches", async () => {
    answerWith((b) => ({ status: 200, body: JSON.stringify((b as any[]).map((x, i) => result(x.id, `0x${(i + 1).toString(16)}`))) }));
    const r = await both((c) => Promise.all([c.getBlockNumber({ cacheTime: 0 }), c.getChainId(), c.getGasPrice()]), { batch: { wait: 0 } });
    expect(r.ours).toEqual({ value: [1n, 2, 3n] });
    expect(r.ours).toEqual(r.stock);
    expect(r.requests).toHaveLength(1);
  });

  it("answers a JSON-RPC error as the same typed error", async () => {
    answerWith((b) => ({
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id: b.id, error: { code: -32601, message: "the method eth_nope does not exist" } }),
    }));
    const r = await both((c) => c.request({ method: "eth_nope" } as never));
    expect(r.ours).toMatchObject({ error: "MethodNotFoundRpcError", code: -32601 });
    expect(r.ours).toEqual(r.stock);
  });

  it("answers an HTTP error with a JSON-RPC body, and one without, as viem does", async () => {
    answerWith((b) => ({ status: 429, body: JSON.stringify({ jsonrpc: "2.0", id: b.id, error: { code: -32005, message: "limit exceeded" } }) }));
    const limited = await both((c) => c.getBlockNumber({ cacheTime: 0 }));
    expect(limited.ours).toMatchObject({ error: "LimitExceededRpcError" });
    expect(limited.ours).toEqual(limited.stock);
    answerWith(() => ({ status: 502, type: "text/html", body: "<html>bad gateway</html>" }));
    const bad = await both((c) => c.getBlockNumber({ cacheTime: 0 }));
    expect(bad.ours).toMatchObject({ error: "HttpRequestError", status: 502 });
    expect(bad.ours).toEqual(bad.stock);
  });

  it("times out as viem does (TimeoutError), and the next request is answered", async () => {
    answerWith("hang");
    const r = await both((c) => c.getBlockNumber({ cacheTime: 0 }), { timeout: 300 });
    expect(r.ours).toMatchObject({ error: "TimeoutError" });
    expect(r.ours).toEqual(r.stock);
    answerWith((b) => ({ status: 200, body: JSON.stringify(result(b.id, "0x7")) }));
    expect(await both((c) => c.getBlockNumber({ cacheTime: 0 }))).toMatchObject({ ours: { value: 7n } });
  });

  it("refuses an answer over 10 MiB with viem's error", async () => {
    answerWith((b) => ({ status: 200, body: JSON.stringify(result(b.id, `0x${"0".repeat(11 * 1024 * 1024)}`)) }));
    const r = await both((c) => c.getBlockNumber({ cacheTime: 0 }));
    expect(r.ours).toMatchObject({ error: "ResponseBodyTooLargeError", short: "HTTP response body exceeded the size limit." });
    expect(r.ours).toEqual(r.stock);
  });

  it("fails on a port nobody listens on as viem does, naming the refusal", async () => {
    const dead = await new Promise<number>((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const r = await both((c) => c.getBlockNumber({ cacheTime: 0 }), {}, `http://127.0.0.1:${dead}`);
    expect(r.ours).toEqual({ ...r.stock, details: expect.stringMatching(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/) });
    expect(r.stock).toMatchObject({ error: "HttpRequestError", details: "fetch failed" });
  });
});
