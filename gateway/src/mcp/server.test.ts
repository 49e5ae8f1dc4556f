import { describe, expect, it } from "vitest";
import { buildMcpServer, toolsServing, type ToolContext } from "./server";
import type { ToolDefinition } from "./tools";

const tools = ["get_health", "get_treasury", "deposit"].map((name) => ({ name }) as ToolDefinition);

describe("toolsServing: the tools a request's MCP server registers", () => {
  it("a single tools/call of a known tool: that tool alone", () => {
    expect(toolsServing({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_treasury", arguments: {} } }, tools)).toEqual([tools[1]]);
  });

  it("every tool for anything else: tools/list, an unknown tool's call (answered tool_not_found), a batch, no name, no body", () => {
    for (const body of [
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "no_such_tool" } },
      [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_health" } }],
      { jsonrpc: "2.0", id: 1, method: "tools/call" },
      null,
      undefined,
    ])
      expect(toolsServing(body, tools)).toBe(tools);
  });
});

describe("buildMcpServer", () => {
  it("every request's server shares one JSON Schema validator (none makes its own Ajv instance)", () => {
    const build = () => buildMcpServer([], {} as ToolContext, "1", () => undefined);
    const validatorOf = (s: ReturnType<typeof build>) => (s.server as unknown as { _jsonSchemaValidator: unknown })._jsonSchemaValidator;
    const [a, b] = [build(), build()];
    expect(validatorOf(a)).toBeDefined();
    expect(validatorOf(a)).toBe(validatorOf(b));
  });
});
