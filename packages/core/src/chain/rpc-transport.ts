/**
 * The chain clients' JSON-RPC transport: viem's `http` transport (its batching, timeouts, retries, errors)
 * with its one `fetch` call made over Node's own HTTP client on kept-alive connections
 * (lib/keep-alive-post.ts). The answer is handed back read whole, in the shape of the `Response` viem reads
 * (status, ok, headers.get, text): `fetch`'s Request, Headers and web-stream objects were two fifths of the
 * local facilitator's CPU in the bench's profile (bench/README.md, item 28). Every chain client of the
 * gateway, the local facilitator and the signer agent is made with it; none may call inside a store transaction
 * (lib/store-transaction.ts).
 */
import { http, ResponseBodyTooLargeError, type HttpTransport, type HttpTransportConfig } from "viem";
import { AnswerTooLargeError, keepAlivePost, MAX_ANSWER_BYTES } from "../lib/keep-alive-post";
import { refuseInsideStoreTransaction } from "../lib/store-transaction";

/** the part of `Response` viem's HTTP RPC client reads */
class Answer {
  readonly ok: boolean;
  readonly body = null;
  readonly headers: { get(name: string): string | null; has(name: string): boolean; forEach(fn: (value: string, name: string) => void): void };
  constructor(
    readonly status: number,
    readonly statusText: string,
    raw: Record<string, string | string[] | undefined>,
    private readonly textBody: string,
  ) {
    this.ok = status >= 200 && status < 300;
    const valueOf = (name: string) => {
      const v = raw[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
    };
    this.headers = {
      get: valueOf,
      has: (name) => valueOf(name) !== null,
      forEach: (fn) => {
        for (const name of Object.keys(raw)) fn(valueOf(name)!, name);
      },
    };
  }
  async text(): Promise<string> {
    return this.textBody;
  }
  async json(): Promise<unknown> {
    return JSON.parse(this.textBody);
  }
}

/** a `fetch` for viem's HTTP RPC client: POST only, the body a string, the answer read whole */
export async function rpcFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  if (input instanceof Request || typeof init?.body !== "string" || (init.method ?? "POST") !== "POST") {
    refuseInsideStoreTransaction(String(input instanceof Request ? input.url : input));
    return fetch(input, init);
  }
  // viem hands its headers over as a plain object of strings
  let headers = init.headers as Record<string, string> | undefined;
  if (headers === undefined || headers instanceof Headers || Array.isArray(headers)) {
    headers = {};
    for (const [name, value] of new Headers(init.headers)) headers[name] = value;
  }
  const res = await keepAlivePost(input, headers, init.body, { signal: init.signal, maxBytes: MAX_ANSWER_BYTES }).catch((err: unknown) => {
    // viem's own error for it (it reads a fetched body the same way, up to the same size)
    throw err instanceof AnswerTooLargeError ? new ResponseBodyTooLargeError({ maxSize: err.maxBytes, size: err.readBytes }) : err;
  });
  return new Answer(res.status, res.statusText, res.headers, res.text) as unknown as Response;
}

/** viem's `http` transport over kept-alive connections (see above) */
export function rpcHttp(url: string | undefined, config: HttpTransportConfig = {}): HttpTransport {
  return http(url, { ...config, fetchFn: rpcFetch });
}
