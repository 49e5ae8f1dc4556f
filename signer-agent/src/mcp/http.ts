/**
 * `signer-agent mcp --http`: the same MCP server on a loopback HTTP port (createMcpHandler: 2026-07-28, and
 * 2025-11-25 stateless), guarded as `serve` is: its bearer token (SIGNER_SERVE_TOKEN), compared in constant time;
 * a Host that is not this loopback port, or an Origin that is not (a web page's DNS rebinding), is refused 403.
 * On 2025-11-25 over HTTP each request is stateless, so the host cannot be asked: an action that needs a
 * person's yes is refused there (confirmation_unavailable) and goes on over stdio or 2026-07-28.
 */
import http from "node:http";
import { createMcpHandler, type McpServer } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { sameToken } from "../serve";

export function serveMcpHttp(factory: () => McpServer, opts: { port: number; token: string; onerror?: (err: Error) => void }): Promise<http.Server> {
  const handler = toNodeHandler(createMcpHandler(factory, { legacy: "stateless", onerror: opts.onerror }), { onerror: opts.onerror });
  const server = http.createServer((req, res) => {
    const refuse = (status: number, error: string, message: string) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error, message }));
    };
    const port = (server.address() as { port: number }).port;
    const local = [`127.0.0.1:${port}`, `localhost:${port}`];
    if (!local.includes(req.headers.host ?? "")) return refuse(403, "forbidden_host", `Host must be ${local.join(" or ")}`);
    const origin = req.headers.origin;
    if (origin !== undefined && !local.some((h) => origin === `http://${h}`))
      return refuse(403, "forbidden_origin", `Origin ${origin} is not this loopback endpoint`);
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ") || !sameToken(auth.slice(7), opts.token)) return refuse(401, "unauthorized", "signer token missing or invalid");
    void handler(req, res);
  });
  return new Promise((resolve) => server.listen(opts.port, "127.0.0.1", () => resolve(server)));
}
