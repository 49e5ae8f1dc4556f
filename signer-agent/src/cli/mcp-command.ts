/**
 * `signer-agent mcp`: the agent (its key opened here, once) served as an MCP server on stdio, both protocol eras
 * (serveStdio). stdout carries only MCP messages; progress goes to stderr. Ends when the host closes stdin.
 */
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { AuditLog } from "../audit-log";
import { loadPolicy } from "../policy";
import { signerMcpFactory } from "../mcp/server";
import { randomBytes } from "node:crypto";
import { serveMcpHttp } from "../mcp/http";
import { agentFrom, type CommandContext } from "./agent-commands";
import { UsageError } from "./args";
import { out } from "./io";

export const SIGNER_MCP_VERSION = "0.1.0";

export async function mcp({ cfg, flags, log }: CommandContext): Promise<number> {
  if (flags.port !== undefined && !flags.http) throw new UsageError("mcp", "--port is for --http: without it the server speaks on stdio");
  const agent = await agentFrom(cfg, log);
  const factory = signerMcpFactory({
    agent,
    policy: loadPolicy(cfg.policy),
    audit: new AuditLog(cfg.auditLog),
    gatewayUrl: cfg.gatewayUrl,
    scheme: cfg.bearer ? "bearer" : cfg.x402Scheme,
    x402SessionDir: cfg.x402SessionDir,
    version: SIGNER_MCP_VERSION,
  });
  if (flags.http) {
    const port = flags.port === undefined ? 4031 : Number(flags.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535 || !/^\d+$/.test(String(flags.port ?? "4031")))
      throw new UsageError("mcp", `--port "${String(flags.port)}" is not a port: a whole number from 0 to 65535`);
    const token = cfg.serveToken ?? randomBytes(24).toString("base64url");
    const server = await serveMcpHttp(factory, { port, token, onerror: (err) => log(`mcp: ${err.message.split("\n")[0]}`) });
    const bound = (server.address() as { port: number }).port;
    out(`MCP endpoint on http://127.0.0.1:${bound}/ for ${agent.address}${cfg.serveToken ? "" : `; token ${token}`}`);
    await new Promise(() => undefined);
  }
  log(`MCP server on stdio for ${agent.address} (gateway ${cfg.gatewayUrl})`);
  await new Promise<void>((resolve) => {
    serveStdio(factory, { onerror: (err) => log(`mcp: ${err.message.split("\n")[0]}`) });
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
  });
  return 0;
}
