/**
 * The gateway's MCP server speaks both protocol revisions from POST /api/mcp: the SDK 2 client at
 * 2026-07-28 (server/discover, no initialize, no Mcp-Session-Id, every request's version in _meta) and the
 * 1.x client at 2025-11-25 (initialize). Each lists the same tools, calls them with a key, pays a priced tool
 * with x402 in _meta, and gets the typed tool error for bad input on every tool that takes input.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { newIdempotencyKey, sandboxTenant } from "../helpers/treasury";
import { newPayer, startX402Stack, type X402Stack } from "../helpers/x402-stack";

let fork: BaseForkNode;
let stack: X402Stack;

beforeAll(async () => {
  fork = await startBaseFork();
  stack = await startX402Stack({ BASE_RPC_URL: fork.rpcUrl });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await fork?.stop();
});

interface AnyClient {
  listTools(): Promise<{ tools: { name: string; inputSchema: { properties?: Record<string, unknown> } }[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> }): Promise<Record<string, any>>;
  close(): Promise<void>;
}

/** what each client sends on every HTTP request, recorded */
const seen: { era: string; headers: Headers; body: any }[] = [];
const recording =
  (era: string): typeof fetch =>
  async (input, init) => {
    seen.push({ era, headers: new Headers(init?.headers), body: init?.body ? JSON.parse(String(init.body)) : undefined });
    return fetch(input, init);
  };

const CLIENTS = {
  async "SDK 2 client, 2026-07-28"(key?: string): Promise<AnyClient> {
    const client = new ModernClient({ name: "modern-agent", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    const headers = key ? { authorization: `Bearer ${key}` } : undefined;
    await client.connect(new ModernTransport(new URL(`${stack.gateway.url}/api/mcp`), { requestInit: { headers }, fetch: recording("modern") }));
    return client as unknown as AnyClient;
  },
  async "1.x client, 2025-11-25"(key?: string): Promise<AnyClient> {
    const client = new LegacyClient({ name: "legacy-agent", version: "1.0.0" });
    const headers = key ? { authorization: `Bearer ${key}` } : undefined;
    await client.connect(new LegacyTransport(new URL(`${stack.gateway.url}/api/mcp`), { requestInit: { headers }, fetch: recording("legacy") }));
    return client as unknown as AnyClient;
  },
};

async function pay(required: unknown) {
  const { account } = await newPayer(stack.chain);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return { account, payment: await client.createPaymentPayload(required as never) };
}

/** an argument of the wrong type for whatever the property declares (a number where a string is, a string where anything else is) */
const wrongType = (schema: unknown): unknown => ((schema as { type?: unknown }).type === "string" ? 12345 : "not-a-valid-value");

describe.each(Object.keys(CLIENTS) as (keyof typeof CLIENTS)[])("the gateway's MCP tools with the %s", (era) => {
  it("lists every tool of the discovery document and runs the treasury tools with a key", async () => {
    const discovery = (await (await fetch(`${stack.gateway.url}/api/mcp`)).json()) as { tools: { name: string }[] };
    const { key } = await sandboxTenant(stack.gateway.url);
    const client = await CLIENTS[era](key);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(discovery.tools.map((t) => t.name).sort());

    const treasury = await client.callTool({ name: "get_treasury_state", arguments: {} });
    expect(treasury.isError ?? false, JSON.stringify(treasury)).toBe(false);
    expect(treasury.structuredContent).toMatchObject({ object: "treasury_state", sandbox: true, holdings: { usdc: expect.any(Number) } });
    const deposit = await client.callTool({ name: "prepare_deposit", arguments: { amount_usdc: 250, idempotency_key: newIdempotencyKey() } });
    expect(deposit.isError ?? false, JSON.stringify(deposit)).toBe(false);
    expect(deposit.structuredContent).toMatchObject({ object: "action_receipt", action: "deposit", amount_usdc: 250, fee_usdc: 5, net_amount: 245 });
    await client.close();
  }, 30_000);

  it("answers bad input on every tool that takes input with the typed tool error, and goes on serving", async () => {
    const client = await CLIENTS[era]();
    const { tools } = await client.listTools();
    const withInput = tools.filter((t) => Object.keys(t.inputSchema.properties ?? {}).length > 0);
    expect(withInput.length).toBeGreaterThanOrEqual(16);
    for (const tool of withInput) {
      const args = Object.fromEntries(Object.entries(tool.inputSchema.properties!).map(([name, schema]) => [name, wrongType(schema)]));
      const answer = await client.callTool({ name: tool.name, arguments: args });
      expect(answer.isError, `${tool.name}: ${JSON.stringify(answer)}`).toBe(true);
      expect(answer.structuredContent, tool.name).toMatchObject({
        error: "invalid_request",
        http_status: 400,
        message: expect.stringContaining(`Invalid arguments for tool ${tool.name}`),
        request_id: expect.stringMatching(/^req_/),
      });
    }
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
    expect(unknown.structuredContent).toMatchObject({ error: "tool_not_found", http_status: 404 });
    // the server process is still there and answering
    expect((await client.listTools()).tools.length).toBe(tools.length);
    await client.close();
  }, 60_000);

  it("pays a priced tool with x402 in _meta: told the price, paid, settled once on the local Base Sepolia", async () => {
    const client = await CLIENTS[era]();
    const args = { amount_usdc: 400, idempotency_key: newIdempotencyKey() };
    const unpaid = await client.callTool({ name: "prepare_deposit", arguments: args });
    expect(unpaid.isError).toBe(true);
    const required = unpaid.structuredContent as Record<string, any>;
    expect(required).toMatchObject({ x402Version: 2, error: "payment_required", accepts: [{ scheme: "exact", network: "eip155:84532", amount: "50000" }] });
    const { account, payment } = await pay(required);
    const before = await stack.chain.balanceOf(account.address);
    const paid = await client.callTool({ name: "prepare_deposit", arguments: args, _meta: { "x402/payment": payment } });
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    expect(paid.structuredContent).toMatchObject({ object: "unsigned_transaction", status: "awaiting_signature" });
    expect(paid._meta?.["x402/payment-response"]).toMatchObject({ success: true, network: "eip155:84532", payer: account.address });
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 50_000n);
    await client.close();
  }, 60_000);
});

describe("what each client sent", () => {
  it("the SDK 2 client never initialized and never carried a session; each of its requests named its revision in _meta", () => {
    const modern = seen.filter((s) => s.era === "modern" && s.body?.method);
    expect(modern.length).toBeGreaterThan(5);
    expect(modern.map((s) => s.body.method)).not.toContain("initialize");
    expect(modern.map((s) => s.body.method)).toContain("server/discover");
    for (const s of modern) {
      expect(s.headers.get("mcp-session-id")).toBeNull();
      if (s.body.id !== undefined) expect(s.body.params?._meta?.["io.modelcontextprotocol/protocolVersion"], s.body.method).toBe("2026-07-28");
    }
    const legacy = seen.filter((s) => s.era === "legacy" && s.body?.method);
    expect(legacy.map((s) => s.body.method)).toContain("initialize");
  });
});
