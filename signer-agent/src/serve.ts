/**
 * `signer-agent serve`: a loopback-only signing endpoint for a co-located
 * agent, guarded by its own bearer token. POST /run {action, amount_usdc,
 * target?} runs the whole loop; POST /sign {step} signs one envelope step after
 * the policy and the preflight. The key never leaves this process.
 */
import http from "node:http";
import { timingSafeEqual, createHash } from "node:crypto";
import type { SignerAgent } from "./agent";
import { RefusedError, SignerAgentError } from "./errors";

/** a token compared in constant time (its hash, so lengths do not show) */
export const sameToken = (a: string, b: string) => timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

export function serveAgent(agent: SignerAgent, opts: { port: number; token: string }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      // exact on-chain figures are integers (bigint): sent as decimal strings
      res.end(JSON.stringify(body, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
    };
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ") || !sameToken(auth.slice(7), opts.token))
      return reply(401, { error: "unauthorized", message: "signer token missing or invalid" });
    if (req.method !== "POST") return reply(405, { error: "method_not_allowed", message: "POST only" });
    let raw = "";
    req.on("data", (d) => {
      raw += d;
      if (raw.length > 256 * 1024) req.destroy();
    });
    req.on("end", async () => {
      try {
        const body = JSON.parse(raw || "{}") as Record<string, any>;
        if (req.url === "/address") return reply(200, { address: agent.address });
        if (req.url === "/run") {
          const result = await agent.run(body.action, body.amount_usdc, body.target ? { target: body.target } : {});
          return reply(200, result);
        }
        if (req.url === "/sign") return reply(200, { signed_transaction: await agent.signStep(body.step) });
        return reply(404, { error: "not_found", message: `no route ${req.url}` });
      } catch (err) {
        if (err instanceof RefusedError) return reply(403, { error: "refused", stage: err.stage, message: err.shortMessage, detail: err.body });
        return reply(400, {
          error: "invalid_request",
          message: err instanceof SignerAgentError ? err.shortMessage : err instanceof Error ? err.message : String(err),
        });
      }
    });
  });
  return new Promise((resolve) => server.listen(opts.port, "127.0.0.1", () => resolve(server)));
}
