/**
 * MCP over real HTTP with the official SDK client (Streamable HTTP), every
 * tool compared with its REST twin, plus the plain JSON-RPC and 400 cases.
 */
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, newIdempotencyKey, sandboxTenant } from "../helpers/treasury";

let gw: TestGateway;
let v: ResponseValidator;

async function connect(key?: string): Promise<Client> {
  const client = new Client({ name: "treasury-test-agent", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/api/mcp`), {
    requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : {},
  });
  await client.connect(transport);
  return client;
}

const callTool = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: Boolean(r.isError), body: r.structuredContent as any, text: (r.content as any[])[0].text as string };
};

/**
 * Fields that differ between two calls of the same operation (times, request and execution ids). The
 * treasury's own id and wallet are kept: a tool that answered with another treasury's figures fails.
 */
const VOLATILE = new Set([
  "request_id",
  "created_at",
  "estimated_at",
  "time",
  "uptime_seconds",
  "submitted_at",
  "updated_at",
  "status_url",
  "id",
  "api_key",
  "api_key_expires_at",
  "http_status",
  "idempotent_replayed",
]);
const KEPT_IDS = new Set(["treasury_id"]);
const stable = (o: any): any =>
  Array.isArray(o)
    ? o.map(stable)
    : o && typeof o === "object"
      ? Object.fromEntries(
          Object.entries(o)
            .filter(([k]) => !VOLATILE.has(k) && (KEPT_IDS.has(k) || !/_id$/.test(k)))
            .map(([k, x]) => [k, stable(x)]),
        )
      : o;

beforeAll(async () => {
  gw = await startTestGateway();
  v = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
});
afterAll(() => gw.close());

describe("MCP with the SDK client over Streamable HTTP", () => {
  it("initializes and lists every tool with a schema, a description and annotations", async () => {
    const client = await connect();
    expect(client.getServerVersion()?.name).toBe("agent-treasury-gateway");
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        "create_sandbox_treasury",
        "estimate_action",
        "get_fee_schedule",
        "get_gateway_status",
        "get_health",
        "get_liquidation_distance",
        "get_market_rates",
        "get_policy_state",
        "get_receipt",
        "get_treasury_schema",
        "get_treasury_state",
        "list_safe_transactions",
        "prepare_borrow",
        "prepare_convert",
        "prepare_deposit",
        "prepare_exit",
        "prepare_repay",
        "prepare_sell",
        "prepare_withdraw",
        "preview_action",
        "relay_signed_transaction",
        "request_live_access",
      ].sort(),
    );
    for (const t of tools) {
      expect(t.description!.length).toBeGreaterThan(30);
      expect(t.inputSchema.type).toBe("object");
      // every tool declares the shape of its result (from its REST twin's documented answers)
      expect(t.outputSchema?.type, t.name).toBe("object");
      expect(Object.keys(t.outputSchema?.properties ?? {}).length, t.name).toBeGreaterThan(1);
      expect(typeof t.annotations?.readOnlyHint).toBe("boolean");
      expect(typeof t.annotations?.destructiveHint).toBe("boolean");
      expect(typeof t.annotations?.idempotentHint).toBe("boolean");
    }
    const preview = tools.find((t) => t.name === "preview_action")!;
    expect(preview.inputSchema.required).toEqual(["action", "amount"]);
    expect(tools.find((t) => t.name === "prepare_deposit")!.inputSchema.required).toContain("idempotency_key");
    await client.close();
  });

  it("public tools answer what REST answers", async () => {
    const client = await connect();
    const pairs: [string, Record<string, unknown>, string, string, unknown?][] = [
      ["get_market_rates", {}, "GET", "/api/v1/public/market-rates"],
      ["get_liquidation_distance", { ltv: 55 }, "GET", "/api/v1/public/liquidation-distance?ltv=55"],
      ["get_fee_schedule", {}, "GET", "/fees.json"],
      ["get_gateway_status", {}, "GET", "/api/v1/public/gateway-status"],
      ["get_treasury_schema", {}, "GET", "/api/v1/treasuries"],
      ["get_policy_state", {}, "GET", "/api/v1/public/policy-state"],
      ["preview_action", { action: "deposit", amount: 1000 }, "POST", "/api/v1/public/preview", { action: "deposit", amount: 1000 }],
    ];
    for (const [tool, args, method, path, body] of pairs) {
      const m = await callTool(client, tool, args);
      const r = await call(gw.url, method, path, body ? { body } : {});
      expect(m.isError, tool).toBe(false);
      expect(stable(m.body), tool).toEqual(stable(r.body));
    }
    await client.close();
  });

  it("the safety rail and validation come back as tool errors with the REST code and fields", async () => {
    const client = await connect();
    const rail = await callTool(client, "preview_action", { action: "borrow", amount: 20000, current_ltv: 50 });
    const rest = await call(gw.url, "POST", "/api/v1/public/preview", { body: { action: "borrow", amount: 20000, current_ltv: 50 } });
    expect(rail.isError).toBe(true);
    expect(rail.body).toMatchObject({ error: "ltv_limit_exceeded", http_status: 403, safe_amount: 6000, allowed: false, approved: false });
    expect(stable(rail.body)).toEqual(stable(rest.body));
    expect(JSON.parse(rail.text).safe_amount).toBe(6000);

    const bad = await client.callTool({ name: "get_liquidation_distance", arguments: { ltv: 99 } });
    expect(bad.isError).toBe(true);
    // the SDK validates arguments against the tool's input schema; the refusal is the typed body, naming the field
    expect(bad.structuredContent).toMatchObject({
      error: "invalid_request",
      http_status: 400,
      message: "Input validation error: Invalid arguments for tool get_liquidation_distance: ltv: Too big: expected number to be <=75",
      request_id: expect.stringMatching(/^req_/),
    });
    expect(JSON.parse((bad.content as any[])[0].text)).toEqual(bad.structuredContent);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
    expect(unknown.structuredContent).toMatchObject({ error: "tool_not_found", http_status: 404 });
    await client.close();
  });

  it("get_receipt takes the route's path parameter as an argument and answers what REST answers; another treasury's is not found", async () => {
    const t = await sandboxTenant(gw.url);
    const rest = authed(gw.url, t.key);
    const deposit = await rest.post("/api/v1/deposits", { amount_usdc: 1000 });
    expect(deposit.status).toBe(200);
    const client = await connect(t.key);
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_receipt")!;
    expect(tool.inputSchema.required).toEqual(["id"]);
    const read = await callTool(client, "get_receipt", { id: deposit.body.deposit_id });
    expect(read.isError).toBe(false);
    expect(stable(read.body)).toEqual(stable((await rest.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body));
    expect(read.body.deposit_id).toBe(deposit.body.deposit_id);
    // the path parameter is validated as on REST, and encoded: it cannot reach another path
    expect((await callTool(client, "get_receipt", { id: "../treasury" })).body).toMatchObject({ error: "invalid_request" });
    await client.close();
    const other = await connect((await sandboxTenant(gw.url)).key);
    expect((await callTool(other, "get_receipt", { id: deposit.body.deposit_id })).body).toMatchObject({ error: "not_found", http_status: 404 });
    await other.close();
  });

  it("creates a sandbox treasury, then runs the treasury tools with the key from the Authorization header", async () => {
    const anon = await connect();
    const account = privateKeyToAccount(generatePrivateKey());
    const created = await callTool(anon, "create_sandbox_treasury", { wallet_address: account.address });
    expect(created.isError).toBe(false);
    expect(created.body.api_key).toMatch(/^sk_test_/);
    // without a key a priced treasury tool answers like REST's 402: the x402 MCP transport's PaymentRequired
    const noKey = await callTool(anon, "get_health");
    expect(noKey.isError).toBe(true);
    expect(noKey.body).toMatchObject({ x402Version: 2, error: "payment_required", http_status: 402, accepts: [{ network: "eip155:84532", amount: "1000" }] });
    await anon.close();

    const key: string = created.body.api_key;
    const client = await connect(key);
    const rest = authed(gw.url, key);
    expect(stable((await callTool(client, "get_health")).body)).toEqual(stable((await rest.get("/api/v1/health")).body));
    expect(stable((await callTool(client, "get_treasury_state")).body)).toEqual(stable((await rest.get("/api/v1/treasury")).body));
    expect(stable((await callTool(client, "get_policy_state")).body)).toEqual(stable((await rest.get("/api/v1/policy-state")).body));
    const est = await callTool(client, "estimate_action", { action: "deposit", amount_usdc: 500 });
    expect(stable(est.body)).toEqual(stable((await rest.post("/api/v1/estimate", { action: "deposit", amount_usdc: 500 }, null)).body));

    // prepare_deposit: the same envelope REST would build, relayed through MCP after signing locally
    const idem = newIdempotencyKey();
    const env = await callTool(client, "prepare_deposit", { amount_usdc: 500, idempotency_key: idem });
    expect(env.isError).toBe(false);
    expect(env.body).toMatchObject({ object: "unsigned_transaction", status: "awaiting_signature", http_status: 202, idempotent_replayed: false });
    v.check("POST", "/api/v1/deposits", 202, env.body);
    const again = await callTool(client, "prepare_deposit", { amount_usdc: 500, idempotency_key: idem });
    expect(again.body.tx_id).toBe(env.body.tx_id);
    expect(again.body.idempotent_replayed).toBe(true);
    // REST with the same key and body sees the same stored outcome
    const viaRest = await rest.post("/api/v1/deposits", { amount_usdc: 500 }, idem);
    expect(viaRest.body.tx_id).toBe(env.body.tx_id);
    const conflict = await callTool(client, "prepare_borrow", { amount_usdc: 10, idempotency_key: newIdempotencyKey() });
    expect(conflict.body).toMatchObject({ error: "conflicting_operation", http_status: 409 });

    for (const step of env.body.steps) {
      const signed = await account.signTransaction({
        type: "eip1559",
        chainId: step.unsigned_transaction.chain_id,
        nonce: step.seq,
        to: step.unsigned_transaction.to,
        data: step.unsigned_transaction.data,
        value: 0n,
        gas: 200_000n,
        maxFeePerGas: 10n ** 9n,
        maxPriorityFeePerGas: 10n ** 6n,
      });
      const relayed = await callTool(client, "relay_signed_transaction", {
        tx_id: step.tx_id,
        signed_transaction: signed,
        idempotency_key: newIdempotencyKey(),
      });
      expect(relayed.isError, relayed.text).toBe(false);
      expect(relayed.body).toMatchObject({ object: "relay_receipt", status: "confirmed", tx_id: step.tx_id });
      v.check("POST", "/api/v1/relay", 200, relayed.body);
    }
    const state = await callTool(client, "get_treasury_state");
    expect(state.body.pending_tx_id).toBeNull();
    expect(state.body.ltv).toBe(0);
    // the relayed deposit supplied USDC, as on a chain, and bought no BTC or ETH
    expect([state.body.holdings.btc, state.body.holdings.eth, state.body.holdings.usdc_supplied > 0]).toEqual([0, 0, true]);

    // an envelope through MCP that signs the wrong data is refused like REST
    const borrowEnv = await callTool(client, "prepare_borrow", { amount_usdc: 50, idempotency_key: newIdempotencyKey() });
    expect(borrowEnv.body.http_status).toBe(202);
    const wrong = await account.signTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: 9,
      to: borrowEnv.body.steps[0].unsigned_transaction.to,
      data: "0x",
      gas: 1n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
    });
    const refused = await callTool(client, "relay_signed_transaction", {
      tx_id: borrowEnv.body.steps[0].tx_id,
      signed_transaction: wrong,
      idempotency_key: newIdempotencyKey(),
    });
    expect(refused.body).toMatchObject({ error: "data_mismatch", http_status: 400 });
    await client.close();
  });

  it("prepare_convert, prepare_repay and request_live_access follow REST", async () => {
    const t = await sandboxTenant(gw.url);
    const client = await connect(t.key);
    const convert = await callTool(client, "prepare_convert", { amount_usdc: 1000, target: "btc", idempotency_key: newIdempotencyKey() });
    expect(convert.body).toMatchObject({ object: "action_receipt", action: "convert", fee_usdc: 20, target: "btc", http_status: 200 });
    const repay = await callTool(client, "prepare_repay", { amount_usdc: 100, idempotency_key: newIdempotencyKey() });
    expect(repay.body).toMatchObject({ action: "repay", remaining_borrow: 23900, status: "completed" });
    const rail = await callTool(client, "prepare_borrow", { amount_usdc: 50000, idempotency_key: newIdempotencyKey() });
    expect(rail.body).toMatchObject({ error: "ltv_limit_exceeded", http_status: 403 });
    const noKey = await callTool(client, "prepare_repay", { amount_usdc: 100 });
    expect(noKey.isError).toBe(true);
    expect(noKey.body).toMatchObject({
      error: "invalid_request",
      message: expect.stringMatching(/^Input validation error: Invalid arguments for tool prepare_repay: idempotency_key: /),
    });

    const application = { operator_name: "Mo", operator_email: "mo@example.com", use_case: "Quarterly ETH buys with a conservative credit line." };
    const applied = await callTool(client, "request_live_access", application);
    expect(applied.body).toMatchObject({ object: "agent_access_request", status: "received" });
    const status = await call(gw.url, "GET", `/api/v1/agents/apply/${applied.body.id}`);
    expect(status.body.status).toBe("received");
    const tooShort = await callTool(client, "request_live_access", { ...application, use_case: "short" });
    expect(tooShort.isError).toBe(true);
    expect(tooShort.body).toMatchObject({
      error: "invalid_request",
      message: expect.stringMatching(/^Input validation error: Invalid arguments for tool request_live_access: use_case: /),
    });
    await client.close();
  });
});

describe("plain JSON-RPC and discovery", () => {
  it("a curl-style tools/list with only Content-Type: application/json gets 200 and the tools", async () => {
    const r = await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", id: 7, method: "tools/list" } });
    expect(r.status).toBe(200);
    expect(r.body.jsonrpc).toBe("2.0");
    expect(r.body.id).toBe(7);
    expect(r.body.result.tools.length).toBe(22);
    v.check("POST", "/api/mcp", 200, r.body);
  });

  it("an id of null (spec 4.2) is answered with id null; a notification (no id) is 202 with no body", async () => {
    const r = await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", id: null, method: "tools/list" } });
    expect(r.status).toBe(200);
    expect(r.body.id).toBeNull();
    expect(r.body.result.tools.length).toBe(22);
    expect(Number(r.headers.get("content-length") ?? r.text.length)).toBe(Buffer.byteLength(r.text));
    v.check("POST", "/api/mcp", 200, r.body);
    const n = await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", method: "notifications/initialized" } });
    expect([n.status, n.text]).toEqual([202, ""]);
    v.check("POST", "/api/mcp", 202, n.body);
  });

  it("a request missing jsonrpc or method gets 400 with the typed error body", async () => {
    for (const body of [
      { id: 1, method: "tools/list" },
      { jsonrpc: "2.0", id: 1 },
      { jsonrpc: "1.0", id: 1, method: "tools/list" },
    ]) {
      const r = await call(gw.url, "POST", "/api/mcp", { body });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: "invalid_request" });
      expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
      v.check("POST", "/api/mcp", 400, r.body);
    }
  });

  it("GET /api/mcp is the discovery document with the tools and their input schemas", async () => {
    const r = await call(gw.url, "GET", "/api/mcp");
    expect(r.status).toBe(200);
    v.check("GET", "/api/mcp", 200, r.body);
    expect(r.body).toMatchObject({ name: "agent-treasury-gateway", endpoint: `${gw.url}/api/mcp`, status: "public_demo_online" });
    const listed = (await call(gw.url, "POST", "/api/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/list" } })).body.result.tools;
    expect(r.body.tools.map((t: any) => t.name)).toEqual(listed.map((t: any) => t.name));
    for (const t of r.body.tools) {
      const twin = listed.find((x: any) => x.name === t.name);
      expect(Object.keys(t.inputSchema.properties ?? {}).sort()).toEqual(Object.keys(twin.inputSchema.properties ?? {}).sort());
      expect(t.annotations).toEqual({
        readOnlyHint: twin.annotations.readOnlyHint,
        destructiveHint: twin.annotations.destructiveHint,
        idempotentHint: twin.annotations.idempotentHint,
        openWorldHint: twin.annotations.openWorldHint,
      });
    }
    const agents = await call(gw.url, "GET", "/agents.json");
    expect(agents.body.mcp_url).toBe(r.body.endpoint);
  });
});

describe("the DNS-rebinding guard", () => {
  /** POST initialize with the given Host and Origin (node:http: fetch does not let a caller set Host) */
  const initialize = (host: string, origin?: string) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const url = new URL(`${gw.url}/api/mcp`);
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "rebinding-test", version: "1" } },
      });
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { host, ...(origin ? { origin } : {}), "content-type": "application/json", accept: "application/json, text/event-stream" },
        },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  it("refuses a foreign Host or Origin with 403 and the typed error, and serves this server's own", async () => {
    const port = new URL(gw.url).port;
    const evil = await initialize("evil.example.com", "http://evil.example.com");
    expect(evil.status).toBe(403);
    expect(evil.body).toMatchObject({ error: "host_not_allowed", request_id: expect.stringMatching(/^req_/) });
    v.check("POST", "/api/mcp", 403, evil.body);
    const origin = await initialize(`127.0.0.1:${port}`, "http://evil.example.com");
    expect([origin.status, origin.body.error]).toEqual([403, "origin_not_allowed"]);
    expect([(await initialize(`127.0.0.1:${port}`, "null")).status]).toEqual([403]);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      const ok = await initialize(host, `http://${host}`);
      expect(ok.status).toBe(200);
      expect(ok.body.result.serverInfo.name).toBe("agent-treasury-gateway");
    }
    // no Origin (a non-browser client) is fine with a good Host
    expect((await initialize(`localhost:${port}`)).status).toBe(200);
  });
});
