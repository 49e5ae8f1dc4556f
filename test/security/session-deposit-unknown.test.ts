/**
 * A session deposit whose receipt the facilitator could not wait for is unknown, not failed: the deposit may be
 * (here, is) mined. The facilitator is the real one on a local Base Sepolia, reached through a relay that passes
 * every call on and, once, answers the deposit's settlement as @x402/evm does when `waitForTransactionReceipt`
 * throws (`settlement_pending`, with the transaction it sent). The gateway answers 503
 * `payment_settlement_unknown` and keeps the payment locked with its settlement to retry (docs/SECURITY.md
 * invariant 22); it never records it as failed nor answers `settlement_failed` while the payer's money moved.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../helpers/rows";
import { channelIdOf, channelOf, channelOnChain, depositHeader, sessionOffer, type SessionOffer } from "../helpers/sessions";
import { newPayer, SCHEME_ENV, startX402Stack, type X402Stack } from "../helpers/x402-stack";

const HEALTH = "/api/v1/health";
let stack: X402Stack;
let offer: SessionOffer;
let relay: http.Server;
let target = "";
let pendOnce = false;

beforeAll(async () => {
  relay = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (req.headers.authorization) headers.authorization = req.headers.authorization;
      const body = req.method === "POST" ? Buffer.concat(chunks) : undefined;
      const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, body });
      let text = await upstream.text();
      const sent = body ? (JSON.parse(body.toString()) as { paymentPayload?: { payload?: { type?: string } } }) : {};
      if (req.url === "/settle" && pendOnce && sent.paymentPayload?.payload?.type === "deposit") {
        pendOnce = false;
        const settled = JSON.parse(text) as { transaction: string; network: string; payer: string };
        text = JSON.stringify({ ...settled, success: false, errorReason: "settlement_pending", errorMessage: "timed out waiting for the receipt" });
      }
      res.writeHead(upstream.status, { "content-type": "application/json" });
      res.end(text);
    });
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
  stack = await startX402Stack({ ...SCHEME_ENV, X402_FACILITATOR_URL: `http://127.0.0.1:${(relay.address() as AddressInfo).port}` });
  target = stack.facilitator.url;
  offer = await sessionOffer(stack.gateway.url, HEALTH);
}, 120_000);
afterAll(async () => {
  await stack?.close();
  relay?.close();
});

describe("a session deposit whose receipt was not seen", () => {
  it("is answered 503 payment_settlement_unknown and kept to settle again, never recorded as failed", async () => {
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const header = await depositHeader(stack.chain, payer, offer, config, 10_000n, 1_000n);
    pendOnce = true;
    const r = await fetch(`${stack.gateway.url}${HEALTH}`, { headers: { "PAYMENT-SIGNATURE": header } });
    expect(pendOnce).toBe(false);
    // the deposit is on chain: the payer's money moved
    expect((await channelOnChain(stack.chain, config)).balance).toBe(10_000n);
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: string }).error).toBe("payment_settlement_unknown");
    expect(r.headers.get("retry-after")).not.toBeNull();
    const nonce = `session:${channelIdOf(config)}:1000`;
    const rows = await rowsOf<{ state: string; pending_settlement: string | null }>(stack.gateway.ctx.db, "x402_payments", { nonce });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.state).toBe("locked");
    expect(rows[0]!.pending_settlement).not.toBeNull();
  });
});
