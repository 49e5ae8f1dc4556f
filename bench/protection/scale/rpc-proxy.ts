/**
 * A JSON-RPC proxy on 127.0.0.1 in front of the fork: it counts the HTTP requests it forwards and the calls
 * they hold (each element of a batch counted, and per method), and holds every request `delayMs` before
 * forwarding it (a remote node's round trip; 0 or 30 ms in the bench).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RpcCounts {
  /** HTTP requests (a batch is one) */
  requests: number;
  /** JSON-RPC calls (each element of a batch) */
  calls: number;
  byMethod: Record<string, number>;
}

export interface RpcProxy {
  url: string;
  counts(): RpcCounts;
  reset(): void;
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export async function startRpcProxy(target: string, delayMs = 0): Promise<RpcProxy> {
  let delay = delayMs;
  let c: RpcCounts = { requests: 0, calls: 0, byMethod: {} };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      c.requests++;
      try {
        const parsed = JSON.parse(body.toString()) as { method?: string } | { method?: string }[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
          c.calls++;
          const m = call.method ?? "?";
          c.byMethod[m] = (c.byMethod[m] ?? 0) + 1;
        }
      } catch {
        // not JSON: forwarded as it is, counted as a request
      }
      const forward = () => {
        const up = http.request(
          {
            host: upstream.hostname,
            port: upstream.port,
            path: upstream.pathname,
            method: "POST",
            agent,
            headers: { "content-type": "application/json", "content-length": body.length },
          },
          (r) => {
            res.writeHead(r.statusCode ?? 502, { "content-type": "application/json" });
            r.pipe(res);
          },
        );
        up.on("error", (err) => {
          res.writeHead(502);
          res.end(String(err));
        });
        up.end(body);
      };
      if (delay > 0) setTimeout(forward, delay);
      else forward();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ ...c, byMethod: { ...c.byMethod } }),
    reset: () => {
      c = { requests: 0, calls: 0, byMethod: {} };
    },
    setDelay: (ms) => {
      delay = ms;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
