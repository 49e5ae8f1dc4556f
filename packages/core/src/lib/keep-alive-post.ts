/**
 * One HTTP(S) POST over Node's own client on kept-alive connections, its answer read whole. Shared by
 * the facilitator client (gateway/src/x402/facilitator-client.ts) and the chain clients' JSON-RPC transport
 * (chain/rpc-transport.ts): `fetch`'s Request, Headers and web-stream objects were a fifth of the
 * gateway's CPU on a paid request and two fifths of the facilitator's in the bench's profile
 * (bench/README.md, items 25 and 28). Refused inside a store transaction (lib/store-transaction.ts).
 */
import http from "node:http";
import https from "node:https";
import { refuseInsideStoreTransaction } from "./store-transaction";

export interface PostAnswer {
  status: number;
  statusText: string;
  /** the answer's headers, names in lower case (Node's) */
  headers: http.IncomingHttpHeaders;
  text: string;
}

export interface PostOptions {
  /** the request fails when no answer is complete by then (0: no limit of its own) */
  timeoutMs?: number;
  /** aborts the request; the promise rejects with the signal's reason, as `fetch` does */
  signal?: AbortSignal | null;
  /** an answer longer than this fails (and its connection is closed) */
  maxBytes?: number;
}

/** the default cap of an answer's size, as viem's own (10 MiB) */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/**
 * Kept-alive connections. An idle socket is closed after `IDLE_MS`, a second before the usual servers'
 * Keep-Alive timeout (Node's 5 s, Anvil's), so a request never goes out on a connection the server is closing.
 */
const IDLE_MS = 4_000;
const agentOptions = { keepAlive: true, maxSockets: 256, timeout: IDLE_MS };
const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };

export class AnswerTooLargeError extends Error {
  constructor(
    readonly maxBytes: number,
    /** the bytes read when the answer was cut off */
    readonly readBytes: number,
  ) {
    super(`the answer is longer than ${maxBytes} bytes`);
  }
}

export function keepAlivePost(url: string | URL, headers: Record<string, string>, body: string, opts: PostOptions = {}): Promise<PostAnswer> {
  const target = typeof url === "string" ? new URL(url) : url;
  try {
    refuseInsideStoreTransaction(target.host);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  const secure = target.protocol === "https:";
  if (!secure && target.protocol !== "http:") return Promise.reject(new TypeError(`not an HTTP URL: ${target.protocol}`));
  const signal = opts.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const maxBytes = opts.maxBytes ?? MAX_ANSWER_BYTES;
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(
      target,
      { method: "POST", agent: agents[secure ? "https:" : "http:"], headers: { ...headers, "Content-Length": String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) req.destroy(new AnswerTooLargeError(maxBytes, size));
          else chunks.push(c);
        });
        res.on("error", fail);
        res.on("end", () => {
          done();
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? "",
            headers: res.headers,
            text: chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"),
          });
        });
      },
    );
    const timer = opts.timeoutMs
      ? setTimeout(() => req.destroy(new Error(`no answer from ${target.host} in ${opts.timeoutMs} ms`)), opts.timeoutMs)
      : undefined;
    const onAbort = () => req.destroy(signal!.reason instanceof Error ? signal!.reason : new DOMException("This operation was aborted", "AbortError"));
    signal?.addEventListener("abort", onAbort, { once: true });
    function done() {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
    function fail(err: Error) {
      done();
      reject(err);
    }
    req.on("error", fail);
    req.end(body);
  });
}
