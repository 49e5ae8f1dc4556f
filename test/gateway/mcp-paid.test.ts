/**
 * Paid MCP tools (the x402 MCP transport) with the official SDK client and
 * @x402/core's client making the payments: an agent that holds only a key
 * lists the tools, is told the price, pays, prepares a deposit, signs it and
 * relays it through MCP to a confirmed receipt on the local Base fork. The
 * payments settle on the local Base Sepolia, checked to the atomic unit. Also:
 * MCP protocol traffic does not take from the write budget.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createWalletClient, http } from "viem";
import { generatePrivateKey, type PrivateKeyAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { startTestGateway } from "../helpers/gateway";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { createPaymentHeader } from "x402/client";
import { newIdempotencyKey } from "../helpers/treasury";
import { envelopeCount, newPayer, startX402Stack, type X402Stack } from "../helpers/x402-stack";

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

async function connect(url = stack.gateway.url): Promise<Client> {
  const client = new Client({ name: "paying-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/api/mcp`)));
  return client;
}

/** a v2 PaymentPayload for the PaymentRequired a tool answered, made by the real v2 client */
async function pay(account: PrivateKeyAccount, required: unknown) {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return client.createPaymentPayload(required as never);
}

const structured = (r: Awaited<ReturnType<Client["callTool"]>>) => r.structuredContent as Record<string, any>;

describe("an agent with only a key pays for MCP tools", () => {
  it("lists, is told the price, pays, prepares a deposit, signs and relays it through MCP; charged once, retry free", async () => {
    const { account } = await newPayer(stack.chain);
    const mcp = await connect();
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["prepare_deposit", "relay_signed_transaction", "get_health"]));

    const key = newIdempotencyKey();
    const unpaid = await mcp.callTool({ name: "prepare_deposit", arguments: { amount_usdc: 500, idempotency_key: key } });
    expect(unpaid.isError).toBe(true);
    const required = structured(unpaid);
    expect(required).toMatchObject({
      x402Version: 2,
      error: "payment_required",
      resource: { url: `${stack.gateway.url}/api/v1/deposits` },
      accepts: [{ scheme: "exact", network: "eip155:84532", amount: "50000", payTo: stack.payTo, asset: stack.chain.usdc }],
    });
    expect(JSON.parse((unpaid.content as { text: string }[])[0]!.text)).toEqual(required);

    const before = { payer: await stack.chain.balanceOf(account.address), payTo: await stack.chain.balanceOf(stack.payTo) };
    const payment = await pay(account, required);
    const paid = await mcp.callTool({ name: "prepare_deposit", arguments: { amount_usdc: 500, idempotency_key: key }, _meta: { "x402/payment": payment } });
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    const envelope = structured(paid);
    expect(envelope).toMatchObject({
      object: "unsigned_transaction",
      status: "awaiting_signature",
      http_status: 202,
      idempotent_replayed: false,
      unsigned_transaction: { chain: "base" },
    });
    expect(paid._meta?.["x402/payment-response"]).toMatchObject({
      success: true,
      network: "eip155:84532",
      payer: account.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await stack.chain.balanceOf(account.address)).toBe(before.payer - 50_000n);
    expect(await stack.chain.balanceOf(stack.payTo)).toBe(before.payTo + 50_000n);

    // the same call again (an answer the agent lost): the spent payment proves nothing (it is public on chain);
    // with a fresh payment, the stored answer, and the fresh payment is not settled
    const spent = await mcp.callTool({ name: "prepare_deposit", arguments: { amount_usdc: 500, idempotency_key: key }, _meta: { "x402/payment": payment } });
    expect(structured(spent)).toMatchObject({ error: "payment_already_used" });
    const again = await mcp.callTool({
      name: "prepare_deposit",
      arguments: { amount_usdc: 500, idempotency_key: key },
      _meta: { "x402/payment": await pay(account, required) },
    });
    expect(structured(again)).toMatchObject({ tx_id: envelope.tx_id, idempotent_replayed: true });
    expect(await stack.chain.balanceOf(account.address)).toBe(before.payer - 50_000n);

    // sign the envelope's one transaction as viem fills it, relay it through MCP (free): confirmed on the fork
    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
    const u = envelope.unsigned_transaction;
    const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value) }));
    const relayed = await mcp.callTool({
      name: "relay_signed_transaction",
      arguments: { tx_id: envelope.tx_id, signed_transaction: signed, idempotency_key: newIdempotencyKey() },
    });
    expect(relayed.isError ?? false, JSON.stringify(relayed)).toBe(false);
    expect(structured(relayed)).toMatchObject({
      object: "relay_receipt",
      tx_id: envelope.tx_id,
      status: "confirmed",
      simulated: false,
      result: { action: "deposit", amount_usdc: 500 },
    });
    await mcp.close();
  }, 60_000);

  it("takes a version 1 payload too, and refuses a payment for another tool's price without charging", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const mcp = await connect();
    const required = structured(await mcp.callTool({ name: "get_health", arguments: {} }));
    const before = await stack.chain.balanceOf(account.address);
    // a proof for estimate_action's price (10,000) sent to get_health (1,000)
    const estimateRequired = structured(await mcp.callTool({ name: "estimate_action", arguments: { action: "deposit", amount_usdc: 1000 } }));
    const wrong = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": await pay(account, estimateRequired) } });
    expect(wrong.isError).toBe(true);
    expect(structured(wrong)).toMatchObject({ x402Version: 2, error: "payment_does_not_match_route", http_status: 402, accepts: [{ amount: "1000" }] });
    expect(await stack.chain.balanceOf(account.address)).toBe(before);

    // x402 version 1's PaymentPayload (x402-fetch's client) for the same requirements in v1 terms
    const v1 = JSON.parse(
      Buffer.from(
        await createPaymentHeader(wallet as never, 1, {
          scheme: "exact",
          network: "base-sepolia",
          maxAmountRequired: required.accepts[0].amount,
          resource: required.resource.url,
          description: "",
          mimeType: "application/json",
          payTo: required.accepts[0].payTo,
          maxTimeoutSeconds: required.accepts[0].maxTimeoutSeconds,
          asset: required.accepts[0].asset,
          extra: required.accepts[0].extra,
        }),
        "base64",
      ).toString(),
    );
    const health = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": v1 } });
    expect(health.isError ?? false, JSON.stringify(health)).toBe(false);
    expect(structured(health)).toMatchObject({ ltv: 0, http_status: 200 });
    expect(health._meta?.["x402/payment-response"]).toMatchObject({ success: true, network: "base-sepolia" });
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 1_000n);
    await mcp.close();
  }, 60_000);
});

describe("a settlement that fails", () => {
  it("returns only the payment error, never the tool's result, and charges nothing", async () => {
    // a facilitator whose settlement account has no ETH for gas: verify passes, settle reverts
    const broke = await startFacilitator({ rpcUrl: stack.chain.rpcUrl, privateKey: generatePrivateKey(), port: 0 });
    const gw = await startTestGateway({ X402_FACILITATOR: "local", X402_FACILITATOR_URL: broke.url, X402_PAY_TO: stack.payTo });
    onTestFinished(async () => {
      await gw.close();
      await broke.close();
    });
    const { account } = await newPayer(stack.chain);
    const mcp = await connect(gw.url);
    const before = await stack.chain.balanceOf(account.address);
    for (const [name, args] of [
      ["get_health", {}],
      ["prepare_deposit", { amount_usdc: 150, idempotency_key: newIdempotencyKey() }],
    ] as const) {
      const required = structured(await mcp.callTool({ name, arguments: args }));
      const r = await mcp.callTool({ name, arguments: args, _meta: { "x402/payment": await pay(account, required) } });
      expect(r.isError, name).toBe(true);
      expect(structured(r)).toMatchObject({ x402Version: 2, error: "settlement_failed", http_status: 402, accepts: [{ network: "eip155:84532" }] });
      expect(structured(r).ltv).toBeUndefined();
      expect(structured(r).unsigned_transaction).toBeUndefined();
      expect(r._meta?.["x402/payment-response"]).toBeUndefined();
    }
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
    expect(await envelopeCount(gw)).toBe(0);
    await mcp.close();
  }, 60_000);
});

describe("MCP and the write budget (5 per window here)", () => {
  it("protocol traffic and read-only tools take nothing from it; each state-changing call takes one", async () => {
    const gw = await startTestGateway({ RATE_LIMIT_WRITE_PER_MIN: "5" });
    onTestFinished(() => gw.close());
    const mcp = await connect(gw.url);
    for (let i = 0; i < 8; i++) {
      await mcp.listTools();
      await mcp.callTool({ name: "get_fee_schedule", arguments: {} });
    }
    // the budget is whole: five sandbox registrations (a state-changing tool) pass, the sixth is the typed 429
    const results = [];
    for (let i = 0; i < 6; i++) {
      const { account } = await newPayer(stack.chain, 0n);
      results.push(structured(await mcp.callTool({ name: "create_sandbox_treasury", arguments: { wallet_address: account.address } })));
    }
    expect(
      results.slice(0, 5).map((r) => r.object ?? r.error),
      JSON.stringify(results),
    ).toEqual(Array(5).fill("treasury"));
    expect(results[5]).toMatchObject({ error: "rate_limited", http_status: 429, retry_after_seconds: expect.any(Number) });
    // reads still pass
    expect((await mcp.callTool({ name: "get_fee_schedule", arguments: {} })).isError ?? false).toBe(false);
    await mcp.close();
  }, 60_000);
});
