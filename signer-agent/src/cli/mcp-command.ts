/**
 * `signer-agent mcp`: the agent (its key opened here, once) served as an MCP server on stdio, both protocol eras
 * (serveStdio). stdout carries only MCP messages; progress goes to stderr. Ends when the host closes stdin.
 */
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { AuditLog } from "../audit-log";
import { loadPolicy } from "../policy";
import { signerMcpFactory } from "../mcp/server";
import { agentFrom, type CommandContext } from "./agent-commands";

export const SIGNER_MCP_VERSION = "0.1.0";

export async function mcp({ cfg, log }: CommandContext): Promise<number> {
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
  log(`MCP server on stdio for ${agent.address} (gateway ${cfg.gatewayUrl})`);
  await new Promise<void>((resolve) => {
    serveStdio(factory, { onerror: (err) => log(`mcp: ${err.message.split("\n")[0]}`) });
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
  });
  return 0;
}
