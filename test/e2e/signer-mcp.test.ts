/**
 * `signer-agent mcp` on stdio, driven by the official MCP clients against the local stack as `npm start` runs it
 * (its entry, on free ports, its demo agent): one stack boot for every check.
 *
 * - SDK 2 client (2026-07-28): deposit, borrow, a borrow over the ceiling refused before any signature, withdraw,
 *   exit to zero debt and zero aTokens, each checked on the fork; a large action asks (input_required) and stops
 *   on "no" (nothing signed), goes on on "yes"; a host that cannot ask is refused; bad input answers typed errors
 *   and the server lives on.
 * - 1.x client (2025-11-25): the same ask through elicitation.
 * - The demo key is absent from every JSON-RPC message both ways, the server's stderr and the audit log.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import http2 from "node:http";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as LegacyStdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as LegacyHttp } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createPublicClient, http, toHex } from "viem";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { devAccount } from "../../fixtures/base-sepolia";

const ROOT = path.resolve(__dirname, "../..");
const DEMO_PASSPHRASE = "demo-passphrase-not-secret";
const agent = devAccount(3);
const KEY = toHex(agent.getHdKey().privateKey!);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "signer-mcp-"));
const stackFile = path.join(dataDir, "stack.json");
const policyFile = path.join(dataDir, "mcp-policy.json");
/** every JSON-RPC message both ways and every line the server wrote on stderr, for the key scan */
const traffic: string[] = [];
let stack: ReturnType<typeof spawn>;
let stackOut = "";
let forkRpc = "";

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

const clean = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_|FORK_|PORT$|DATA_DIR$|DATABASE_URL$|GATEWAY_URL$)/.test(k)),
) as Record<string, string>;

beforeAll(async () => {
  const [fork, sepolia, facilitator, gateway] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  stack = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: ROOT,
    env: {
      ...clean,
      STACK_FILE: stackFile,
      FORK_PORT: String(fork),
      BASE_SEPOLIA_PORT: String(sepolia),
      FACILITATOR_PORT: String(facilitator),
      PORT: String(gateway),
      DATA_DIR: dataDir,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  stack.stdout!.on("data", (d) => (stackOut += d));
  stack.stderr!.on("data", (d) => (stackOut += d));
  for (let i = 0; i < 900 && !stackOut.includes("local stack running"); i++) await new Promise((r) => setTimeout(r, 100));
  expect(stackOut, stackOut).toContain("local stack running");
  forkRpc = `http://127.0.0.1:${fork}`;
  // the demo agent's policy, with a person asked above 1,000 USDC
  const policy = JSON.parse(fs.readFileSync(path.join(dataDir, "agent", "policy.json"), "utf8"));
  fs.writeFileSync(policyFile, JSON.stringify({ ...policy, confirm_above_usdc: 1000 }));
}, 120_000);

afterAll(async () => {
  if (!stack) return;
  const exited = new Promise((r) => stack.once("exit", r));
  stack.kill("SIGTERM");
  await exited;
});

const serverParams = () => ({
  command: process.execPath,
  args: [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), "mcp"],
  cwd: ROOT,
  env: { ...clean, STACK_FILE: stackFile, SIGNER_PASSPHRASE: DEMO_PASSPHRASE, SIGNER_POLICY: policyFile },
  stderr: "pipe" as const,
});

/** the person's next answer to an ask (true: yes), and what they were shown */
let answer = true;
const asked: string[] = [];

/** a transport whose every message both ways and whose server's stderr are recorded */
function recorded<T extends { send: (m: any, o?: any) => Promise<void>; stderr: unknown; onmessage?: (m: any, e?: any) => void }>(t: T): T {
  const send = t.send.bind(t);
  t.send = (m, o) => {
    traffic.push(JSON.stringify(m));
    return send(m, o);
  };
  let handler: ((m: any, e?: any) => void) | undefined;
  Object.defineProperty(t, "onmessage", {
    get: () => handler && ((m: any, e?: any) => (traffic.push(JSON.stringify(m)), handler!(m, e))),
    set: (h) => (handler = h),
  });
  return t;
}

async function modernClient(o: { canAsk: boolean; capabilities?: Record<string, unknown> }) {
  const client = new Client(
    { name: "signer-mcp-test", version: "1" },
    { capabilities: o.capabilities ?? (o.canAsk ? { elicitation: { form: {} } } : {}), versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  if (o.canAsk)
    client.setRequestHandler("elicitation/create", async (req: any) => {
      asked.push(req.params.message);
      return { action: "accept", content: { confirm: answer } };
    });
  const transport = recorded(new StdioClientTransport(serverParams()));
  await client.connect(transport);
  (transport.stderr as unknown as NodeJS.ReadableStream).on("data", (d) => traffic.push(String(d)));
  return client;
}

const pub = () => createPublicClient({ chain: base, transport: http(forkRpc) });
const balanceOf = (token: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [agent.address] });
const nonce = () => pub().getTransactionCount({ address: agent.address });
const A = AaveV3Base.ASSETS;

type Result = { isError?: boolean; structuredContent?: any; content?: any };

describe("signer-agent mcp on stdio against npm start's stack", () => {
  let client: Client;
  beforeAll(async () => {
    client = await modernClient({ canAsk: true });
  }, 60_000);
  afterAll(async () => client?.close());

  it("lists every tool with a description, an input schema with units, an output schema and annotations", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ["audit_log", "borrow", "convert", "deposit", "exit", "position", "preview", "repay", "sell", "withdraw", "x402_budget"].sort(),
    );
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(60);
      expect(t.outputSchema, t.name).toBeDefined();
      expect(t.annotations?.readOnlyHint, t.name).toBe(["audit_log", "position", "preview", "x402_budget"].includes(t.name));
    }
    const deposit = tools.find((t) => t.name === "deposit")!;
    expect((deposit.inputSchema.properties as any).amount.description).toContain("whole USDC");
    expect(deposit.description).toContain("Refused before any signature");
    expect(tools.find((t) => t.name === "withdraw")!.annotations?.destructiveHint).toBe(true);
  });

  it("bad input on every tool answers a typed invalid_request error, and the server lives on", async () => {
    const { tools } = await client.listTools();
    for (const t of tools) {
      const r = (await client.callTool({ name: t.name, arguments: { amount: "1,000", nonsense: true } })) as Result;
      expect(r.isError, t.name).toBe(true);
      expect(r.structuredContent, t.name).toMatchObject({ error: "invalid_request", request_id: expect.stringMatching(/^req_[0-9a-f]{32}$/) });
    }
    const p = (await client.callTool({ name: "position", arguments: {} })) as Result;
    expect(p.isError).toBeFalsy();
    expect(p.structuredContent.address).toBe(agent.address);
  });

  it("deposit, borrow, a borrow over the ceiling refused before any signature, withdraw: each on the fork", async () => {
    const aBefore = await balanceOf(A.USDC.A_TOKEN);
    const dep = (await client.callTool({ name: "deposit", arguments: { amount: "1000" } })) as Result;
    expect(dep.isError, JSON.stringify(dep.content)).toBeFalsy();
    expect(dep.structuredContent).toMatchObject({ action: "deposit", fee_usdc: "20", confirmed_by_user: false });
    expect(dep.structuredContent.receipts.at(-1)).toMatchObject({ status: "confirmed", simulated: false });
    expect(await balanceOf(A.USDC.A_TOKEN)).toBeGreaterThanOrEqual(aBefore + 980_000_000n - 1n);
    expect(dep.structuredContent.position_after.supplied.usdc).toMatch(/^98\d(\.\d+)?$/);

    const bor = (await client.callTool({ name: "borrow", arguments: { amount: "100" } })) as Result;
    expect(bor.isError, JSON.stringify(bor.content)).toBeFalsy();
    expect(await balanceOf(A.USDC.V_TOKEN)).toBeGreaterThanOrEqual(100_000_000n);

    const n = await nonce();
    const signedBefore = fs
      .readFileSync(path.join(dataDir, "agent", "audit.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"signed"')).length;
    const over = (await client.callTool({ name: "borrow", arguments: { amount: "900" } })) as Result;
    expect(over.isError).toBe(true);
    expect(over.structuredContent).toMatchObject({ error: "refused", stage: "gateway", gateway_error: "ltv_limit_exceeded" });
    expect(await nonce()).toBe(n);
    const signedAfter = fs
      .readFileSync(path.join(dataDir, "agent", "audit.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"signed"')).length;
    expect(signedAfter).toBe(signedBefore);

    const aMid = await balanceOf(A.USDC.A_TOKEN);
    const wd = (await client.callTool({ name: "withdraw", arguments: { amount: "50" } })) as Result;
    expect(wd.isError, JSON.stringify(wd.content)).toBeFalsy();
    expect(await balanceOf(A.USDC.A_TOKEN)).toBeLessThanOrEqual(aMid - 50_000_000n + 1_000_000n);
  }, 240_000);

  it("a large action asks the person: 'no' signs nothing, 'yes' goes on; a host that cannot ask is refused", async () => {
    const n = await nonce();
    answer = false;
    const no = (await client.callTool({ name: "deposit", arguments: { amount: "2000" } })) as Result;
    expect(no.isError).toBe(true);
    expect(no.structuredContent.error).toBe("declined");
    expect(asked.at(-1)).toContain("sign a deposit of 2000 USDC, because 2000 USDC is above the policy's confirm_above_usdc of 1000.");
    expect(asked.at(-1)).toMatch(/The gateway estimates: fee 40 USDC, LTV [\d.]+% before, [\d.]+% after\./);
    expect(await nonce()).toBe(n);

    const mute = await modernClient({ canAsk: false });
    const refused = (await mute.callTool({ name: "deposit", arguments: { amount: "2000" } })) as Result;
    await mute.close();
    expect(refused.structuredContent).toMatchObject({ error: "confirmation_unavailable" });
    expect(refused.structuredContent.message).toContain("declared no elicitation");
    // a host that can only send the user to a URL cannot ask a form question either
    const urlOnly = await modernClient({ canAsk: false, capabilities: { elicitation: { url: {} } } });
    const refusedToo = (await urlOnly.callTool({ name: "deposit", arguments: { amount: "2000" } })) as Result;
    await urlOnly.close();
    expect(refusedToo.structuredContent).toMatchObject({ error: "confirmation_unavailable" });
    expect(await nonce()).toBe(n);

    // what the gateway's preview refuses is refused without troubling the person
    const before = asked.length;
    const overAsk = (await client.callTool({ name: "borrow", arguments: { amount: "100000" } })) as Result;
    expect(overAsk.structuredContent).toMatchObject({ error: "refused", stage: "gateway", gateway_error: "ltv_limit_exceeded" });
    expect(asked.length).toBe(before);
    // a forged yes: a request state this server never minted, with an accepted answer, signs nothing and asks nobody
    const forged = (await client.callTool({
      name: "deposit",
      arguments: { amount: "2000" },
      requestState: "forged-state",
      inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
    } as never)) as Result;
    expect(forged.structuredContent).toMatchObject({ error: "invalid_request" });
    expect(asked.length).toBe(before);
    expect(await nonce()).toBe(n);

    answer = true;
    const aBefore = await balanceOf(A.USDC.A_TOKEN);
    const yes = (await client.callTool({ name: "deposit", arguments: { amount: "2000" } })) as Result;
    expect(yes.isError, JSON.stringify(yes.content)).toBeFalsy();
    expect(yes.structuredContent.confirmed_by_user).toBe(true);
    expect(await balanceOf(A.USDC.A_TOKEN)).toBeGreaterThanOrEqual(aBefore + 1_960_000_000n - 1n);
  }, 240_000);

  it("on 2025-11-25 (the 1.x client) the ask comes as elicitation, and a yes goes on", async () => {
    const legacy = new LegacyClient({ name: "legacy", version: "1" }, { capabilities: { elicitation: {} } });
    const seen: string[] = [];
    legacy.setRequestHandler(ElicitRequestSchema, async (req) => {
      seen.push(req.params.message);
      return { action: "accept", content: { confirm: true } };
    });
    const t = recorded(new LegacyStdio(serverParams()));
    await legacy.connect(t);
    t.stderr?.on("data", (d) => traffic.push(String(d)));
    const r = (await legacy.callTool({ name: "borrow", arguments: { amount: "1100" } })) as Result;
    await legacy.close();
    expect(seen.at(-1)).toContain("sign a borrow of 1100 USDC");
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ action: "borrow", confirmed_by_user: true });
  }, 180_000);

  it("exit: zero debt and zero aTokens on the fork", async () => {
    answer = true;
    const r = (await client.callTool({ name: "exit", arguments: {} })) as Result;
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(await balanceOf(A.USDC.V_TOKEN)).toBe(0n);
    expect(await balanceOf(A.USDC.A_TOKEN)).toBe(0n);
    expect(await balanceOf(A.WETH.A_TOKEN)).toBe(0n);
    expect(await balanceOf(A.cbBTC.A_TOKEN)).toBe(0n);
    expect(r.structuredContent.position_after).toMatchObject({ debt_usd: "0" });
  }, 240_000);

  it("preview, x402_budget and audit_log read what the loop did; an unknown tool is a protocol error and the server lives on", async () => {
    const pv = (await client.callTool({ name: "preview", arguments: { action: "deposit", amount: "500" } })) as Result;
    expect(pv.isError, JSON.stringify(pv.content)).toBeFalsy();
    expect(pv.structuredContent.preview).toMatchObject({ object: "action_preview", service_fee_usdc: 10 });
    const budget = (await client.callTool({ name: "x402_budget", arguments: {} })) as Result;
    expect(budget.structuredContent).toMatchObject({ scheme: "exact", confirm_above_usdc: "1000", confirm_actions: [] });
    // every upward action paid its x402 price, within the day's budget
    expect(Number(budget.structuredContent.spent_today_usdc)).toBeGreaterThan(0);
    expect(Number(budget.structuredContent.spent_today_usdc) + Number(budget.structuredContent.left_today_usdc)).toBe(
      Number(budget.structuredContent.daily_budget_usdc),
    );
    const log = (await client.callTool({ name: "audit_log", arguments: { limit: 500 } })) as Result;
    const events = (log.structuredContent.entries as { event: string; reason?: string }[]).map((e) => e.event);
    expect(events).toEqual(expect.arrayContaining(["x402_payment", "signed", "relayed", "executed", "refused"]));
    expect(log.structuredContent.entries.some((e: { reason?: string }) => /declined by the person asked/.test(e.reason ?? ""))).toBe(true);
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/no_such_tool not found/);
    expect(((await client.callTool({ name: "position", arguments: {} })) as Result).isError).toBeFalsy();
  });

  it("--http: loopback only, the bearer token, Host and Origin checked; the SDK 2 client reads the position over it", async () => {
    const token = "a-long-local-token-for-this-test";
    const c = spawn(process.execPath, [path.join(ROOT, "signer-agent/bin/signer-agent.mjs"), "mcp", "--http", "--port", "0"], {
      cwd: ROOT,
      env: { ...serverParams().env, SIGNER_SERVE_TOKEN: token },
    });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => traffic.push(String(d)));
    try {
      for (let i = 0; i < 300 && !/MCP endpoint on/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
      const url = /MCP endpoint on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
      expect(out).not.toContain(token);
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
      const post = (headers: Record<string, string>) =>
        fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body });
      expect((await post({})).status).toBe(401);
      expect((await post({ authorization: "Bearer wrong" })).status).toBe(401);
      expect((await post({ authorization: `Bearer ${token}`, origin: "http://evil.example" })).status).toBe(403);
      const port = new URL(url).port;
      const rebound = await new Promise<number>((resolve) => {
        const r = http2.request(
          { host: "127.0.0.1", port, method: "POST", path: "/", headers: { host: `evil.example:${port}`, authorization: `Bearer ${token}` } },
          (res) => resolve(res.statusCode!),
        );
        r.end(body);
      });
      expect(rebound).toBe(403);
      const client = new Client(
        { name: "http-test", version: "1" },
        { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
      );
      const seen: string[] = [];
      client.setRequestHandler("elicitation/create", async (req: any) => {
        seen.push(req.params.message);
        return { action: "accept", content: { confirm: true } };
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      const r = (await client.callTool({ name: "position", arguments: {} })) as Result;
      expect(r.structuredContent.address).toBe(agent.address);
      const bad = (await client.callTool({ name: "borrow", arguments: { amount: -5 } })) as Result;
      expect(bad.structuredContent.error).toBe("invalid_request");
      // each HTTP request is its own: the answer to the ask comes on another request, to the state minted on the first
      const aBefore = await balanceOf(A.USDC.A_TOKEN);
      const asked = (await client.callTool({ name: "deposit", arguments: { amount: "1500" } })) as Result;
      expect(seen.at(-1)).toContain("sign a deposit of 1500 USDC");
      expect(asked.isError, JSON.stringify(asked.content)).toBeFalsy();
      expect(await balanceOf(A.USDC.A_TOKEN)).toBeGreaterThanOrEqual(aBefore + 1_470_000_000n - 1n);
      await client.close();
      // 2025-11-25 over HTTP is stateless: the host cannot be asked, so the large action is refused, saying why
      const legacy = new LegacyClient({ name: "legacy-http", version: "1" }, { capabilities: { elicitation: {} } });
      await legacy.connect(new LegacyHttp(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      const n = await nonce();
      const refused = (await legacy.callTool({ name: "deposit", arguments: { amount: "1500" } })) as Result;
      expect(refused.structuredContent).toMatchObject({ error: "confirmation_unavailable" });
      expect(((await legacy.callTool({ name: "position", arguments: {} })) as Result).structuredContent.address).toBe(agent.address);
      expect(await nonce()).toBe(n);
      await legacy.close();
    } finally {
      c.kill("SIGTERM");
      traffic.push(out);
    }
  }, 60_000);

  it("the key is absent from every JSON-RPC message, the server's stderr and the audit log", async () => {
    const audit = fs.readFileSync(path.join(dataDir, "agent", "audit.jsonl"), "utf8");
    expect(traffic.length).toBeGreaterThan(20);
    const all = [...traffic, audit].join("\n").toLowerCase();
    expect(all).not.toContain(KEY.slice(2).toLowerCase());
    expect(all).toContain(agent.address.toLowerCase());
  });
});
